"""The evaluation step as Estimator's Session runs it, for the tf2 runner.

Estimator builds the EVAL graph once, runs the metrics' update ops (with the
loss and what hooks fetch) for every batch, and the value ops once, after
the last batch (its FinalOpsHook); a Session runs only what a fetch needs.
`EvalGraph` does the same without a Session: the step is traced once into
one graph without automatic control dependencies
(tf.compat.v1.wrap_function), and two functions are pruned from it,
`update(batch)` and `values()`. Ops nothing fetches never run, and the
Python state that the model_fn's py_funcs share (a COCO evaluator that its
update op feeds and its value op reads) is one object for both, since both
come from one trace.

On several replicas (MirroredStrategy) a batch is evaluated as on one
device: the first replica gets the whole batch (`join_replicas` joins one
distributed step's per-replica batches in replica order, which is the
global batch of the same input), the other replicas run the same model_fn
on it (the strategy runs every replica) but only the first replica's
fetches are pruned in, so their ops never run. The result is the
one-device result, a partial last batch included: no replica sees an empty
batch. A model_fn whose first-replica fetches need another replica's ops
(a cross-replica sum in its loss) is refused (CrossReplicaEvalError).
"""

import contextlib
import logging
import re
import threading

import tensorflow as tf

from trainer.api import errors
from trainer.engines.tf2 import model_fn_adapter

_v1 = tf.compat.v1
_WRITES = re.compile(r'^(Assign|ResourceApply|ResourceSparseApply|'
                     r'ResourceScatter|Scatter|Apply|SparseApply)')


class CrossReplicaEvalError(errors.TrainerError, ValueError):
  """The model_fn's evaluation combines replicas."""


class NewVariableError(Exception):
  """A variable would be created (no_new_variables)."""


@contextlib.contextmanager
def eager_variables():
  """Enter first (outermost): variables made in the block's traces are made
  eagerly, out of the trace, with their initial values (tf.function cannot
  lift a variable whose initial value reads another one made in the same
  trace: a metric accumulator's copy on a second replica)."""

  def eagerly(next_creator, **kwargs):
    with tf.init_scope():
      return next_creator(**kwargs)

  with tf.variable_creator_scope(eagerly):
    yield


class _RefusalNoise(logging.Filter):
  """Drops the Coordinator's report of a replica thread's
  NewVariableError (MirroredStrategy re-raises it in the caller)."""

  def filter(self, record):
    exc = record.exc_info[0] if record.exc_info else None
    return not (exc is NewVariableError or
                'NewVariableError' in record.getMessage())


@contextlib.contextmanager
def no_new_variables():
  """Enter first (outermost): any variable creation in the block raises
  NewVariableError (a trace without automatic control dependencies cannot
  lift variables out as tf.function does: make them in one first)."""

  def refuse(next_creator, **kwargs):
    del next_creator
    raise NewVariableError(kwargs.get('name'))

  noise = _RefusalNoise()
  logger = tf.get_logger()
  # First: a filter that drops the traceback of the Coordinator's reports
  # (trainer/runtime/startup.py) would hide the exception this one reads.
  logger.filters.insert(0, noise)
  try:
    with tf.variable_creator_scope(refuse):
      yield
  finally:
    logger.removeFilter(noise)


def join_replicas(strategy, element):
  """The batch of one device: each value of a distributed element joined
  over the replicas, in replica order (scalars: the first replica's)."""

  def join(value):
    parts = list(strategy.experimental_local_results(value))
    if len(parts) == 1:
      return parts[0]
    if isinstance(parts[0], tf.SparseTensor):
      return tf.sparse.concat(0, parts, expand_nonconcat_dims=True)
    if parts[0].shape.rank == 0:
      return parts[0]
    return tf.concat(parts, axis=0)

  return tf.nest.map_structure(join, element)


def replica_batches(strategy, element):
  """Each replica's batch of a distributed element, in replica order,
  but those with no example (the replicas past the end of the input)."""
  parts = [strategy.experimental_local_results(value)
           for value in tf.nest.flatten(element, expand_composites=False)]
  batches = []
  for i in range(len(parts[0]) if parts else 0):
    leaves = [values[i] for values in parts]
    sizes = [_batch_size(leaf) for leaf in leaves]
    if any(size == 0 for size in sizes):
      continue
    batches.append(tf.nest.pack_sequence_as(element, leaves))
  return batches


def _batch_size(value):
  """A batch value's number of examples (None for a scalar)."""
  if isinstance(value, tf.SparseTensor):
    return int(value.dense_shape[0])
  if isinstance(value, tf.RaggedTensor):
    return int(value.nrows())
  if value.shape.rank == 0:
    return None
  return int(tf.shape(value)[0])


def joined_spec(element_spec, batch, num_replicas):
  """The TypeSpec structure of joined batches like `batch`: a dense value's
  static batch size is the replicas' static size (element_spec: the
  distributed dataset's) times their number, as the one-device input's;
  unknown when theirs is, or without element_spec; others: unknown."""

  def spec(leaf_spec, value):
    if isinstance(value, tf.Tensor):
      shape = value.shape.as_list()
      if shape:
        first = tf.nest.flatten(leaf_spec, expand_composites=True)[0] if (
            leaf_spec is not None) else None
        size = first.shape[0] if first is not None and (
            first.shape.rank) else None
        shape[0] = None if size is None else size * num_replicas
      return tf.TensorSpec(shape, value.dtype)
    if isinstance(value, tf.SparseTensor):
      return tf.SparseTensorSpec([None] + value.shape.as_list()[1:],
                                 value.dtype)
    if isinstance(value, tf.RaggedTensor):
      return tf.RaggedTensorSpec([None] + value.shape.as_list()[1:],
                                 value.dtype, value.ragged_rank,
                                 value.row_splits.dtype)
    raise TypeError(f'Evaluation input value {value!r} is not a Tensor, '
                    'SparseTensor or RaggedTensor.')

  if element_spec is None:
    return tf.nest.map_structure(lambda value: spec(None, value), batch)
  return tf.nest.map_structure(spec, element_spec, batch)


def _needed_ops(fetches):
  """Every op `fetches` (tensors and ops) need, through inputs and control
  inputs, as a Session would run them."""
  seen, needed = set(), []
  todo = [getattr(f, 'op', f) for f in fetches]
  while todo:
    op = todo.pop()
    if id(op) in seen:
      continue
    seen.add(id(op))
    needed.append(op)
    todo.extend(t.op for t in op.inputs)
    todo.extend(op.control_inputs)
  return needed


def variable_writes(strategy, variables, replica, first_op):
  """The ops of the graph being built, from its `first_op`-th op on, that
  write the copy of one of `variables` that replica number `replica` uses
  (a Keras metric's update, which its update_state makes without reporting
  it)."""
  graph = _v1.get_default_graph()
  handles = set()
  for variable in variables:
    copies = strategy.experimental_local_results(variable)
    handles.add(id(copies[min(replica, len(copies) - 1)].handle))
  internal = {id(inner) for outer, inner in graph.captures
              if id(outer) in handles}
  device = None  # Replicas may share a variable made outside the strategy.
  if strategy.num_replicas_in_sync > 1:
    device = _device(strategy.extended.worker_devices[replica])
  return [op for op in graph.get_operations()[first_op:]
          if _WRITES.match(op.type) and op.inputs and
          id(op.inputs[0]) in internal and
          (device is None or _device(op.device) == device)]


def _device(name):
  return tf.DeviceSpec.from_string(name).to_string() if name else ''



class EvalGraph:
  """One trace of `replica_fn` on every replica; update() and values()."""

  def __init__(self, strategy, replica_fn, spec, run_replicas=None,
               variable_scope=contextlib.nullcontext):
    """replica_fn(features, labels, replica) -> (fetches, updates, values):
    what a batch fetches (a structure of tensors), the ops it runs, and the
    {name: tensor} read once at the end; called in each replica's context.
    spec: the TypeSpec structure of a batch (joined_spec). run_replicas(fn,
    args): how to run fn on every replica (default strategy.run).
    variable_scope(): a variable-creator scope, entered in the trace, that
    returns the variables the step uses, which exist (a trace that made
    them ran first): wrap_function holds every variable its trace makes by
    the name asked for, and two Keras metrics of one class both ask for
    'total' (the second gets 'total_1'), which it refuses."""
    self._strategy = strategy
    self._run_replicas = run_replicas or (
        lambda fn, args: strategy.run(fn, args=args))
    self._variable_scope = variable_scope
    self._replica_fn = replica_fn
    self._spec = spec
    self._flat_spec = tf.nest.flatten(spec, expand_composites=True)
    self._lock = threading.Lock()
    self._outputs = {}  # replica number -> replica_fn's result.
    self._wrapped = _v1.wrap_function(self._body, self._flat_spec)
    fetches, updates, values = self._outputs[0]
    self.fetches = fetches
    graph = self._wrapped.graph
    inputs = graph.inputs[:len(self._flat_spec)]
    self._check_one_device(tf.nest.flatten(fetches) + list(updates))
    input_ops = {id(t.op) for t in inputs}
    for name, value in values.items():
      found = next((op for op in _needed_ops([value])
                    if id(op) in input_ops), None)
      if found is not None:
        raise ValueError(
            f'eval_metric_ops[{name!r}]: its value op depends on the input '
            f'batch (through {found.name}); Estimator runs value ops once, '
            'after the last batch, with no batch to feed. Compute it from the '
            'metric\'s accumulated state (variables, or a py_func\'s Python '
            'state).')
    self._update = self._wrapped.prune(
        feeds=inputs, fetches=(tf.nest.flatten(fetches), list(updates)))
    self._values = self._wrapped.prune(
        feeds=[], fetches=dict(values)) if values else None

  def _body(self, *flat):
    batch = tf.nest.pack_sequence_as(self._spec, list(flat),
                                     expand_composites=True)
    features, labels = model_fn_adapter.features_labels(batch)
    with self._variable_scope():
      self._run_replicas(
          tf.autograph.experimental.do_not_convert(self._record),
          (features, labels))
    return []

  def _record(self, features, labels):
    replica = tf.get_static_value(
        tf.distribute.get_replica_context().replica_id_in_sync_group)
    result = self._replica_fn(features, labels, int(replica))
    with self._lock:
      self._outputs[int(replica)] = result

  def _check_one_device(self, fetches):
    """CrossReplicaEvalError if the first replica's fetches run ops placed
    on another replica's device."""
    if self._strategy.num_replicas_in_sync < 2:
      return
    others = {_device(d) for d in self._strategy.extended.worker_devices[1:]}
    for op in _needed_ops(fetches):
      if _device(op.device) in others:
        raise CrossReplicaEvalError(
            f'The model_fn\'s EVAL outputs on the first replica need op '
            f'{op.name} ({op.type}) of the replica on {op.device}: its '
            'evaluation combines replicas (a cross-replica sum or gather). '
            'The tf2 runner evaluates each batch on one replica, as '
            'Estimator on one device; evaluate with one replica '
            '(--num_cpu_devices=1).')

  def update(self, batch):
    """Runs one batch: its fetches (numpy, in the structure of fetches)."""
    flat = tf.nest.flatten(batch, expand_composites=True)
    fetched, _ = self._update(*flat)
    return tf.nest.pack_sequence_as(
        self.fetches, [t.numpy() for t in tf.nest.flatten(fetched)])

  def values(self):
    """{name: numpy value} of the value tensors, run now."""
    if self._values is None:
      return {}
    return {name: value.numpy() for name, value in self._values().items()}
