"""Training-step memory of a model_fn, from its graph, true to dtype.

Builds the TRAIN graph of a model_fn at the per-core batch (nothing runs) and
sums static tensor sizes (elements x dtype size, so bfloat16 counts 2 bytes):

  parameter_bytes   model variables (trainable and batch-norm statistics)
  optimizer_bytes   optimizer slots and accumulators (e.g. Adam m, v)
  gradient_bytes    gradients live at once: XLA applies each variable's
                    update as soon as its gradient is ready, so the largest
                    gradient; with --slice=batch plus the running sums of all
  input_bytes       the per-core batch of images and labels
  activation_bytes  forward tensors the backward pass reads (kept for it),
                    traced through casts/reshapes to the tensor actually
                    stored and excluding parameter-derived tensors; with
                    --slice=batch, the largest micro-batch's
  transient_bytes   the largest working set of a single op beyond the above
                    (an elementwise op's result may reuse an operand buffer)
  peak_bytes        their sum: the step's peak, assuming variables are updated
                    in place (as TPU and XLA do)
"""

import collections
import dataclasses
import re

import tensorflow as tf

from model_fn import precision
from model_fn import slicing
from trainer import params as params_lib

_BACKWARD = re.compile(r'(^|/)gradients(_\d+)?/')
_MICRO_BATCH = re.compile(r'(^|/)(micro_batch_\d+)(_\d+)?/')
# Ops whose output XLA stores as (a view or elementwise image of) the input.
_PASS_THROUGH = frozenset(('Identity', 'Cast', 'Reshape', 'ExpandDims',
                           'Squeeze', 'StopGradient', 'Snapshot'))
# Ops that read only the shape of their input.
_SHAPE_ONLY = frozenset(('Shape', 'ShapeN', 'Size', 'Rank', 'ZerosLike',
                         'OnesLike'))
# Elementwise ops whose result can take an operand's buffer.
_IN_PLACE = frozenset(('AddV2', 'Add', 'Sub', 'Mul', 'ReluGrad'))
# Slicing ops -> index of the sliced input.
_SLICES = {'Split': 1, 'SplitV': 0, 'Slice': 0, 'StridedSlice': 0}
# Ops that sum or assemble variable gradients (accumulation, slices).
# Concatenated slices of a gradient are not followed: the slices and the
# whole coexist, and the op's working set counts the slices.
_GRADIENT_SUMS = frozenset(('AddV2', 'AddN', 'Add'))
_STATE_OPS = frozenset(('ReadVariableOp', 'VarHandleOp', 'VariableV2',
                        'Const', 'Shape'))


@dataclasses.dataclass
class Footprint:
  """Bytes per component of one training step at `per_core_batch`."""
  per_core_batch: int
  parameter_bytes: int
  optimizer_bytes: int
  gradient_bytes: int
  input_bytes: int
  activation_bytes: int
  transient_bytes: int

  @property
  def peak_bytes(self):
    return (self.fixed_bytes + self.input_bytes + self.activation_bytes +
            self.transient_bytes)

  @property
  def fixed_bytes(self):
    """Bytes that do not grow with the batch."""
    return self.parameter_bytes + self.optimizer_bytes + self.gradient_bytes

  @property
  def bytes_per_example(self):
    """Bytes that grow with the batch, per example."""
    return (self.input_bytes + self.activation_bytes +
            self.transient_bytes) / self.per_core_batch

  def as_dict(self):
    d = dataclasses.asdict(self)
    d['peak_bytes'] = self.peak_bytes
    return d


def tensor_bytes(tensor):
  """Static size of `tensor` in bytes; ValueError if its shape is dynamic."""
  shape = tensor.shape
  if not shape.is_fully_defined():
    raise ValueError(f'tensor {tensor.name} has a dynamic shape {shape}; '
                     'the memory report needs static shapes.')
  return shape.num_elements() * tensor.dtype.size


def _variable_bytes(variables):
  return sum(v.shape.num_elements() * v.dtype.base_dtype.size
             for v in variables)


def per_core_batch(config):
  """Per-core training batch of a Config: --train_batch_size / --num_cores."""
  return config.train_batch_size // config.num_cores


def _live_ops(graph, fetches):
  """Ops of `graph` that computing `fetches` runs, in creation order."""
  live, stack = set(), [graph.as_graph_element(f).op if not isinstance(
      f, tf.Operation) else f for f in fetches]
  while stack:
    op = stack.pop()
    if op.name in live:
      continue
    live.add(op.name)
    stack.extend(t.op for t in op.inputs)
    stack.extend(op.control_inputs)
  return [op for op in graph.get_operations() if op.name in live]


class _GraphWalk:
  """Classifies the ops of a built training graph."""

  def __init__(self, graph, fetches):
    self._param_derived = {}
    self.ops = _live_ops(graph, fetches)
    self.backward = [op for op in self.ops if _BACKWARD.search(op.name)]
    self._backward_names = {op.name for op in self.backward}

  def is_backward(self, op):
    return op.name in self._backward_names

  def source(self, tensor):
    """The tensor XLA would store for `tensor`: through casts and views.

    Slices of a placeholder (micro-batches) trace to the placeholder.
    """
    while True:
      op = tensor.op
      if op.type in _PASS_THROUGH and op.inputs:
        tensor = op.inputs[0]
      elif op.type == 'IdentityN':  # tf.custom_gradient's forward outputs.
        tensor = op.inputs[tensor.value_index]
      elif op.type in _SLICES and self.source(
          op.inputs[_SLICES[op.type]]).op.type == 'Placeholder':
        tensor = op.inputs[_SLICES[op.type]]
      else:
        return tensor

  def param_derived(self, tensor):
    """True if `tensor` depends only on variables and constants."""
    op = self.source(tensor).op
    if op.name not in self._param_derived:
      if op.type in _STATE_OPS:
        result = True
      elif op.type == 'Placeholder' or not op.inputs:
        result = False
      else:
        result = all(self.param_derived(t) for t in op.inputs)
      self._param_derived[op.name] = result
    return self._param_derived[op.name]

  def kept_for_backward(self):
    """Stored forward tensors read by the backward pass, by name."""
    kept = {}
    for op in self.backward:
      if op.type in _SHAPE_ONLY:
        continue
      for t in op.inputs:
        if self.is_backward(t.op):
          continue
        t = self.source(t)
        if t.op.type == 'Placeholder' or self.param_derived(t):
          continue
        kept[t.name] = t
    return kept


def _activation_bytes(kept):
  """Bytes kept for backward; micro-batches count one at a time."""
  groups = collections.defaultdict(int)
  for name, t in kept.items():
    match = _MICRO_BATCH.search(name)
    groups[match.group(2) if match else None] += tensor_bytes(t)
  shared = groups.pop(None, 0)
  return shared + max(groups.values(), default=0)


def _variable_gradients(walk):
  """Names of the gradient tensors the optimizer applies, and their sums."""
  names, stack = set(), []
  for op in walk.ops:
    if op.type.startswith(('Apply', 'ResourceApply')):
      stack.extend(op.inputs)
  while stack:
    t = stack.pop()
    if t.name in names or t.dtype == tf.resource or not t.shape.rank:
      continue
    names.add(t.name)
    if t.op.type in _PASS_THROUGH or t.op.type in _GRADIENT_SUMS:
      stack.extend(t.op.inputs)
  return names


def _transient_bytes(walk, counted):
  """Largest single-op working set (inputs + outputs) not counted elsewhere."""
  largest = 0
  for op in walk.ops:
    if (op.type in _PASS_THROUGH or op.type in _SHAPE_ONLY or
        op.type in _SLICES or op.type in ('Placeholder', 'IdentityN')):
      continue
    outputs = list(op.outputs)
    if op.type in _IN_PLACE and any(
        t.shape == outputs[0].shape for t in op.inputs):
      outputs = []  # XLA writes the result over a dying operand.
    tensors = {t.name: t for t in list(op.inputs) + outputs
               if t.dtype != tf.resource and t.shape.is_fully_defined()}
    size = sum(tensor_bytes(t) for name, t in tensors.items()
               if name not in counted and
               walk.source(t).name not in counted and
               not walk.param_derived(t))
    largest = max(largest, size)
  return largest


def build_train_graph(model_fn, config):
  """(graph, spec) of model_fn in TRAIN at the per-core batch of a Config,
  on CPU terms (the model_fn gets its params dict)."""
  from model_fn.spec import ModeKeys  # pylint: disable=g-import-not-at-top
  batch = per_core_batch(config)
  params = config.as_params()
  dtype = precision.compute_dtype(params)
  size, channels = config.image_size, config.image_channels
  graph = tf.Graph()
  with graph.as_default():
    images = tf.compat.v1.placeholder(dtype, [batch, size, size, channels],
                                      name='images')
    labels = tf.compat.v1.placeholder(tf.int32, [batch], name='labels')
    run_params = params_lib.replaced(params, batch_size=batch, use_tpu=False,
                                     model_dir=None, mode='train')
    spec = model_fn({'image': images}, labels, ModeKeys.TRAIN, run_params)
  return graph, spec


def footprint(model_fn, config):
  """The Footprint of one training step of model_fn under a Config."""
  graph, spec = build_train_graph(model_fn, config)
  with graph.as_default():
    v1 = tf.compat.v1
    trainable = v1.trainable_variables()
    moving = v1.get_collection(v1.GraphKeys.MOVING_AVERAGE_VARIABLES)
    model_refs = {v.ref() for v in trainable + moving}
    step = v1.train.get_global_step()
    optimizer = [v for v in v1.global_variables()
                 if v.ref() not in model_refs and v is not step]
  walk = _GraphWalk(graph, [spec.train_op, spec.loss])
  kept = walk.kept_for_backward()
  inputs = [graph.get_tensor_by_name('images:0'),
            graph.get_tensor_by_name('labels:0')]
  batch_sliced = slicing.num_slices(config.as_params(), 'batch') > 1
  gradient = max(_variable_bytes([v]) for v in trainable)
  if batch_sliced:
    gradient += _variable_bytes(trainable)
  counted = set(kept) | {t.name for t in inputs} | _variable_gradients(walk)
  return Footprint(
      per_core_batch=per_core_batch(config),
      parameter_bytes=_variable_bytes(trainable + moving),
      optimizer_bytes=_variable_bytes(optimizer),
      gradient_bytes=gradient,
      input_bytes=sum(tensor_bytes(t) for t in inputs),
      activation_bytes=_activation_bytes(kept),
      transient_bytes=_transient_bytes(walk, counted))
