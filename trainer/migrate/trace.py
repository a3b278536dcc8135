"""Builds the model_fn once per mode in a TF1 graph and records what it does.

As Estimator builds it (tf.Graph, features and labels from the input_fn's
iterator), with the calls trainer.migrate carries over recorded as they
are made: the tf.compat.v1 optimizer's apply_gradients (its class,
hyperparameters, learning-rate tensor, slots), ExponentialMovingAverage,
tf.compat.v1.metrics in the metric function, summaries, warm starts; the
spec's fields (host_call, hooks, scaffolds, predictions, export_outputs);
and the serving input function's placeholders. The result is a
facts.ModelFacts, or RefusedError naming the construct no migration can
carry.
"""

import contextlib
import copy
import inspect

import tensorflow as tf

from trainer.api import errors
from trainer.compat import estimator_calls
from trainer.compat import tf1_semantics
from trainer.compat import v1_objects
from trainer.migrate import facts as facts_lib
from trainer.engines.tf2 import spec as spec_lib

_v1 = tf.compat.v1
TRAIN, EVAL, PREDICT = spec_lib.TRAIN, spec_lib.EVAL, spec_lib.PREDICT
_MOVING = ('moving_mean', 'moving_variance')
# Ops only a TPU runs: a model_fn that builds them under use_tpu=False has
# no CPU/GPU equivalent to migrate to.
_TPU_ONLY_OPS = frozenset(('TPUReplicateMetadata', 'TPUReplicatedInput',
                           'TPUPartitionedCall', 'TPUCompilationResult'))


class RefusedError(errors.TrainerError, ValueError):
  """A construct trainer.migrate cannot carry over; the message names it
  and what to do."""


class _Records:
  """What the recorded calls saw during one model_fn build."""

  def __init__(self):
    self.applies = []  # (optimizer, inner optimizer, grads_and_vars, step)
    self.emas = []  # (ema, var_list)
    self.metrics = []  # (v1 name, kwargs, value tensor)
    self.summaries = 0
    self.init_from_checkpoint = 0


def _optimizer_classes():
  """tf.compat.v1.train.Optimizer and every loaded subclass that defines
  its own apply_gradients (CrossShardOptimizer, custom ones)."""
  found, pending = [], [_v1.train.Optimizer]
  while pending:
    cls = pending.pop()
    if 'apply_gradients' in cls.__dict__:
      found.append(cls)
    pending.extend(cls.__subclasses__())
  return found


@contextlib.contextmanager
def _patched(owner, name, make):
  original = getattr(owner, name)
  setattr(owner, name, make(original))
  try:
    yield
  finally:
    setattr(owner, name, original)


@contextlib.contextmanager
def recording(records):
  """Within the block, the calls above are recorded in `records` (and made
  as usual: the graph is Estimator's)."""
  stack = contextlib.ExitStack()

  def apply_recorder(original):
    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
      grads_and_vars = list(grads_and_vars)
      records.applies.append((self, getattr(self, '_opt', self),
                              grads_and_vars, global_step))
      return original(self, grads_and_vars, global_step, name)
    return apply_gradients

  def ema_recorder(original):
    def apply(self, var_list=None):
      records.emas.append((self, var_list))
      return original(self, var_list)
    return apply

  def metric_recorder(name):
    def make(original):
      def metric(*args, **kwargs):
        value, update = original(*args, **kwargs)
        bound = _bound_arguments(original, args, kwargs)
        records.metrics.append((name, bound, value))
        return value, update
      return metric
    return make

  def counter(attribute):
    def make(original):
      def counted(*args, **kwargs):
        setattr(records, attribute, getattr(records, attribute) + 1)
        return original(*args, **kwargs)
      return counted
    return make

  with stack:
    for cls in _optimizer_classes():
      stack.enter_context(_patched(cls, 'apply_gradients', apply_recorder))
    stack.enter_context(_patched(_v1.train.ExponentialMovingAverage, 'apply',
                                 ema_recorder))
    for name in _public_functions(_v1.metrics):
      stack.enter_context(_patched(_v1.metrics, name, metric_recorder(name)))
    for name in ('scalar', 'histogram', 'image', 'audio', 'text'):
      stack.enter_context(_patched(_v1.summary, name, counter('summaries')))
    stack.enter_context(_patched(_v1.train, 'init_from_checkpoint',
                                 counter('init_from_checkpoint')))
    yield records


def _public_functions(module):
  return [n for n in dir(module) if not n.startswith('_') and
          callable(getattr(module, n))]


def _bound_arguments(function, args, kwargs):
  """{argument: value} of a call, for the v1 metric's settings."""
  try:
    bound = inspect.signature(function).bind(*args, **kwargs)
  except (TypeError, ValueError):
    return dict(kwargs)
  return dict(bound.arguments)


class Tracer:
  """Builds the model_fn per mode, as Estimator, and gathers ModelFacts."""

  def __init__(self, model_fn, input_fns, params, serving_input_fn=None):
    estimator_calls.check_model_fn(model_fn)
    self._model_fn = model_fn
    self._input_fns = input_fns  # {mode: input_fn}
    self._params = params
    self._serving_input_fn = serving_input_fn
    self.constructs = []
    self.learning_rates = []  # [[step, rate]] of a schedule in the graph.

  # -- what the model_fn and input_fn see --------------------------------

  def batch_size(self, mode):
    key = 'train_batch_size' if mode == TRAIN else 'eval_batch_size'
    return self._params[key]

  def model_params(self, mode):
    return dict(copy.copy(self._params), batch_size=self.batch_size(mode),
                use_tpu=False)

  def input_params(self, mode):
    context = tf.distribute.InputContext(1, 0, 1)
    from trainer.engines.tf2 import input_context  # pylint: disable=g-import-not-at-top
    return dict(copy.copy(self._params), mode=mode,
                batch_size=self.batch_size(mode),
                context=input_context.TPUInputContext(context))

  def _note(self, kind, construct, where, todo=''):
    self.constructs.append(facts_lib.Construct(kind, construct, where, todo))

  # -- one mode -----------------------------------------------------------

  def _features_labels(self, mode):
    input_fn = self._input_fns[mode]
    params = self.input_params(mode)
    result = estimator_calls.call_input_fn(input_fn, mode, params, None,
                                           params['context'])
    if isinstance(result, tf.data.Dataset):
      result = _v1.data.make_one_shot_iterator(result).get_next()
    if isinstance(result, (tuple, list)) and len(result) == 2:
      return result[0], result[1]
    return result, None

  def build(self, mode):
    """(graph, spec, records) of the model_fn built in `mode`."""
    graph = tf.Graph()
    with graph.as_default():
      features, labels = self._features_labels(mode)
      if mode == PREDICT:
        labels = None  # Estimator's predict() and export give none.
      records = _Records()
      with recording(records):
        _v1.train.get_or_create_global_step()
        spec = estimator_calls.call_model_fn(
            self._model_fn, features, labels, mode, self.model_params(mode))
        spec = spec_lib.normalize(spec, mode)
        if spec.eval_metrics is not None:
          metric_fn, tensors = spec.eval_metrics
          spec.eval_metric_ops = (metric_fn(**tensors) if isinstance(
              tensors, dict) else metric_fn(*tensors))
      graph.features, graph.labels = features, labels
    return graph, spec, records

  # -- the whole model ----------------------------------------------------

  def trace(self):
    """ModelFacts of the model_fn; RefusedError for what cannot migrate."""
    try:
      train_graph, train_spec, train_records = self.build(TRAIN)
    except Exception as e:  # pylint: disable=broad-except
      raise RefusedError(f'the model_fn does not build in TRAIN mode: '
                         f'{type(e).__name__}: {e}') from e
    modes = [TRAIN]
    built = {TRAIN: (train_graph, train_spec, train_records)}
    for mode in (EVAL, PREDICT):
      try:
        built[mode] = self.build(mode)
        modes.append(mode)
      except Exception as e:  # pylint: disable=broad-except
        # Under Estimator that mode fails the same way: nothing to carry.
        self._note('absent', f'{mode} mode', 'model_fn',
                   f'the model_fn does not build in {mode} mode, as under '
                   f'Estimator ({type(e).__name__}: '
                   f'{str(e).splitlines()[0][:120]}); nothing is generated '
                   'for it')
    for graph, _, _ in built.values():
      _refuse_tpu_only(graph)
    self._note('wrapped', 'the network, loss and gradient code',
               'model_fn', 'your model_fn runs inside tf1_bridge.ModelFn; '
               'replace its layers by Keras layers one by one')
    optimizer = self._optimizer(train_graph, train_records)
    ema = self._ema(train_graph, train_records, built.get(EVAL))
    self._hooks_and_summaries(built)
    variables = self._variables(train_graph, optimizer, ema)
    metrics, keys, kind = self._metrics(built.get(EVAL))
    predictions, signatures = self._predictions(built.get(PREDICT))
    receiver, receiver_kind = self._receiver(built.get(PREDICT))
    host_call = train_spec.host_call is not None
    if host_call:
      self._note('converted', 'TPUEstimatorSpec.host_call', 'TRAIN',
                 'train.py runs it on the host after each step, eagerly, as '
                 'TPUEstimator did; tf1_bridge caches its summary writer')
    return facts_lib.ModelFacts(
        model_spec=self._params['model'], input_spec=self._params['input'],
        serving_spec=self._params.get('serving_input_fn') or None,
        params={}, team_flags={},
        takes_labels='labels' in estimator_calls.fn_args(self._model_fn),
        labels_present=train_graph.labels is not None,
        precision=_precision(train_graph), variables=variables,
        optimizer=optimizer, ema=ema, host_call=host_call,
        v1_summaries=train_records.summaries, metrics=metrics,
        metric_keys=keys, eval_metrics_kind=kind, predictions=predictions,
        signatures=signatures, receiver=receiver,
        receiver_kind=receiver_kind, modes=modes, estimator_paths=[],
        constructs=self.constructs, learning_rates=self.learning_rates)

  # -- the optimizer --------------------------------------------------------

  def _optimizer(self, graph, records):
    converted = [r for r in records.applies
                 if type(r[1]).__name__ in facts_lib.CONVERTED_OPTIMIZERS
                 and type(r[1]).__module__.startswith('tensorflow')]
    others = [r for r in records.applies if r not in converted]
    seen = set()
    for optimizer, inner, _, _ in others:
      if id(optimizer) in seen or optimizer is not inner and (
          type(inner).__name__ in facts_lib.CONVERTED_OPTIMIZERS):
        continue
      seen.add(id(optimizer))
      name = f'{type(inner).__module__}.{type(inner).__qualname__}'
      self._note('wrapped', f'optimizer {name}', 'TRAIN train_op',
                 'a tf.compat.v1.train.Optimizer subclass of your own: it '
                 'applies its updates inside the wrapped model_fn; port it '
                 'to a tf_keras optimizer to own it')
    if not records.applies:
      self._note('wrapped', 'train_op without a tf.compat.v1 optimizer',
                 'TRAIN', 'the ops of your train_op run inside the wrapped '
                 'model_fn')
      return None
    if len(converted) != 1 or others and any(
        o[1] is not converted[0][1] for o in others):
      if converted:
        self._note('wrapped', f'{len(records.applies)} apply_gradients calls',
                   'TRAIN', 'the optimizers run as TF1 code inside the '
                   'wrapped model_fn (trainer.migrate converts a train_op '
                   'of one optimizer)')
      return None
    optimizer, inner, grads_and_vars, step = converted[0]
    v1_class = type(inner).__name__
    keras_class, attributes = facts_lib.CONVERTED_OPTIMIZERS[v1_class]
    values = {}
    for argument, attribute in attributes.items():
      value = v1_objects.attribute(inner, attribute)
      if argument == 'learning_rate':
        continue
      static = tf.get_static_value(value) if tf.is_tensor(value) else value
      if static is None or callable(static):
        self._note('wrapped', f'{v1_class} {argument} tensor', 'TRAIN',
                   f'{argument} is computed in the graph: the optimizer '
                   'runs as TF1 code inside the wrapped model_fn')
        return None
      values[argument] = _plain(static)
    lr_value = v1_objects.attribute(inner, attributes['learning_rate'])
    lr = _plain(tf.get_static_value(lr_value)) if tf.is_tensor(
        lr_value) else (None if callable(lr_value) else _plain(lr_value))
    slots = {}
    for _, variable in grads_and_vars:
      names = {}
      for slot_name in inner.get_slot_names():
        slot = inner.get_slot(variable, slot_name)
        if slot is not None:
          names[slot_name] = slot.op.name
      slots[variable.op.name] = names
    slot_refs = {s for names in slots.values() for s in names.values()}
    non_slots = {}
    with graph.as_default():
      optimizer_variables = inner.variables()
    for variable in optimizer_variables:
      name = variable.op.name
      if name not in slot_refs:
        non_slots[name.rsplit('/', 1)[-1]] = name
    wrapper = 'tf.compat.v1.tpu.CrossShardOptimizer(' if (
        optimizer is not inner) else ''
    self._note('converted', f'{wrapper}tf.compat.v1.train.{v1_class}'
               f'{")" if wrapper else ""}', 'TRAIN train_op',
               f'optimizer.py {keras_class}, a tf_keras optimizer with '
               'TF1\'s update rule; the gradients are your model_fn\'s')
    if lr is None:
      self.learning_rates = _learning_rates(graph, lr_value, self._params)
      self._note('wrapped', 'learning-rate schedule', 'TRAIN',
                 'your model_fn computes the learning rate from global_step; '
                 'the train step hands it to the optimizer. To own it, write '
                 'it as a tf_keras LearningRateSchedule (report.json '
                 'learning_rate lists its values)')
    return facts_lib.OptimizerFacts(
        v1_class=v1_class, keras_class=keras_class, name=inner.get_name(),
        hyperparameters=values,
        learning_rate_attribute=attributes['learning_rate'],
        learning_rate=lr, cross_shard=optimizer is not inner,
        steps_global_step=step is not None, slots=slots,
        non_slots=non_slots)

  # -- EMA --------------------------------------------------------------

  def _ema(self, graph, records, eval_built):
    if not records.emas:
      return None
    if len(records.emas) > 1:
      raise RefusedError(
          f'the train_op applies {len(records.emas)} '
          'ExponentialMovingAverages; trainer.migrate carries one. Apply '
          'one EMA to all its variables.')
    ema, var_list = records.emas[0]
    with graph.as_default():
      var_list = list(var_list or _v1.trainable_variables())
    names = [v.op.name for v in var_list]
    shadows = {v.op.name: ema.average(v).op.name for v in var_list}
    decay, num_updates, zero_debias = v1_objects.ema_settings(ema)
    updates = None
    if num_updates is not None:
      updates = 'global_step' if _reads_global_step(num_updates) else None
      if updates is None:
        raise RefusedError(
            'ExponentialMovingAverage(num_updates=...) is neither None nor '
            'the global step; pass num_updates=global_step or None.')
    trainable = {v.op.name for v in graph.get_collection(
        _v1.GraphKeys.TRAINABLE_VARIABLES)}
    moving = {v.op.name for v in graph.get_collection(
        _v1.GraphKeys.GLOBAL_VARIABLES) if v.op.name.rsplit('/', 1)[-1] in
              _MOVING}
    rule = ('trainable' if set(names) == trainable else
            'trainable+moving' if set(names) == trainable | moving else
            'listed')
    evaluate_with_averages = False
    if eval_built is not None and eval_built[1].scaffold_fn is not None:
      evaluate_with_averages = self._eval_restores_averages(eval_built,
                                                             shadows)
    self._note('converted', 'tf.compat.v1.train.ExponentialMovingAverage',
               'TRAIN train_op', 'model.py applies tf.train.'
               'ExponentialMovingAverage after each optimizer step' + (
                   '; evaluation uses the averages, as your EVAL scaffold '
                   'Saver did' if evaluate_with_averages else ''))
    return facts_lib.EmaFacts(
        decay=_plain(tf.get_static_value(decay) if tf.is_tensor(decay)
                     else decay),
        num_updates=updates, zero_debias=bool(zero_debias),
        variables=names, shadows=shadows,
        evaluate_with_averages=evaluate_with_averages, rule=rule)

  def _eval_restores_averages(self, eval_built, shadows):
    """Whether EVAL's scaffold_fn Saver maps each average onto its
    variable (EMA evaluation); RefusedError for another Saver map."""
    graph, spec, _ = eval_built
    with graph.as_default():
      scaffold = spec.scaffold_fn()
    saver = getattr(scaffold, 'saver', None)
    if saver is None:
      return False
    var_list = tf1_semantics.saver_var_list(saver)
    if not isinstance(var_list, dict):
      return False
    inverse = {s: v for v, s in shadows.items()}
    uses = False
    for key, variable in var_list.items():
      name = variable.op.name
      if key == name:
        continue
      if inverse.get(key) == name:
        uses = True
        continue
      raise RefusedError(
          f'the EVAL scaffold\'s Saver restores {name} from checkpoint key '
          f'{key}, which is neither its own name nor its moving average; '
          'trainer.migrate carries EMA evaluation only.')
    return uses

  # -- hooks, summaries, scaffolds ---------------------------------------

  def _hooks_and_summaries(self, built):
    for mode, (_, spec, records) in built.items():
      for hook in spec.hooks + spec.chief_hooks:
        self._note('unconverted', f'SessionRunHook {type(hook).__name__}',
                   f'{mode} spec', 'train.py has no session hooks: do what '
                   'the hook did in the loop (tf.summary, logging)')
      if records.init_from_checkpoint:
        self._note('converted', 'tf.compat.v1.train.init_from_checkpoint',
                   f'{mode}', 'not needed: the converted checkpoint holds '
                   'the trained weights')
      if mode == TRAIN and records.summaries:
        self._note('converted', f'{records.summaries} tf.compat.v1.summary '
                   'op(s)', 'TRAIN model_fn', 'written with tf.summary to '
                   'model_dir by tf1_bridge')

  # -- variables -----------------------------------------------------------

  def _variables(self, graph, optimizer, ema):
    roles = {}
    if optimizer is not None:
      for names in optimizer.slots.values():
        roles.update({n: 'slot' for n in names.values()})
      roles.update({n: 'optimizer' for n in optimizer.non_slots.values()})
    if ema is not None:
      roles.update({n: 'ema' for n in ema.shadows.values()})
    trainable = {v.op.name for v in graph.get_collection(
        _v1.GraphKeys.TRAINABLE_VARIABLES)}
    result = []
    for variable in graph.get_collection(_v1.GraphKeys.GLOBAL_VARIABLES):
      name = variable.op.name
      role = roles.get(name, 'global_step' if name == 'global_step' else
                       'model')
      result.append(facts_lib.VariableFacts(
          name=name, shape=variable.shape.as_list(),
          dtype=variable.dtype.base_dtype.name, trainable=name in trainable,
          role=role))
    return result

  # -- metrics --------------------------------------------------------------

  def _metrics(self, built):
    if built is None:
      return [], [], 'none'
    _, spec, records = built
    ops = spec.eval_metric_ops or {}
    kind = ('eval_metrics' if spec.eval_metrics is not None else
            'eval_metric_ops' if ops else 'none')
    by_value = {id(value): i for i, (_, _, value) in
                enumerate(records.metrics)}
    keys = {}
    for key, metric in ops.items():
      if not isinstance(metric, tuple):
        self._note('unconverted', f'Keras metric {type(metric).__name__}',
                   f'eval metric {key!r}', 'make the metric in model.py '
                   '(Model.eval_metrics) and update it there')
        continue
      index = by_value.get(id(metric[0]))
      if index is None:
        self._note('unconverted', 'a metric value computed from '
                   'tf.compat.v1.metrics', f'eval metric {key!r}',
                   'compute it from the converted metrics\' results in '
                   'model.py')
        continue
      keys[index] = key
    metrics = []
    for index, (name, bound, _) in enumerate(records.metrics):
      keras, arguments = _keras_metric(name, bound)
      key = keys.get(index)
      if not keras:
        self._note('unconverted', f'tf.compat.v1.metrics.{name}',
                   f'eval metric {key!r}', 'write it as a tf_keras metric '
                   'in model.py')
      metrics.append(facts_lib.MetricFacts(
          v1_name=name, key=key, keras=keras, arguments=arguments))
    if metrics:
      self._note('converted', f'{len(metrics)} tf.compat.v1.metrics',
                 'EVAL', 'tf_keras metrics in model.py, updated in call '
                 'order by tf1_bridge')
    return metrics, [keys[i] for i in sorted(keys)], kind

  # -- predictions and serving ---------------------------------------------

  def _predictions(self, built):
    if built is None:
      return None, []
    _, spec, _ = built
    predictions = spec.predictions
    keys = sorted(predictions) if isinstance(predictions, dict) else None
    signatures = []
    from trainer.engines.tf2 import export  # pylint: disable=g-import-not-at-top
    for name, outputs in sorted(export.signatures_of(spec).items()):
      output = (spec.export_outputs or {}).get(name)
      signatures.append(facts_lib.SignatureFacts(
          name=name, outputs=sorted(outputs),
          output_class=type(output).__name__ if output is not None else
          'predictions'))
    return keys, signatures

  def _receiver(self, built):
    if built is None:
      return [], 'raw'
    if self._serving_input_fn is None:
      graph, _, _ = built
      features = graph.features
      if isinstance(features, dict):
        items = sorted(features.items())
      else:
        items = [('input', features)]
      return [facts_lib.ReceiverInput(
          key=key, dtype=tensor.dtype.name,
          shape=[None] + tensor.shape.as_list()[1:], placeholder_index=i)
              for i, (key, tensor) in enumerate(items)], 'raw'
    graph = tf.Graph()
    made = []
    with graph.as_default():
      original = _v1.placeholder

      def placeholder(*args, **kwargs):
        tensor = original(*args, **kwargs)
        made.append(tensor)
        return tensor

      _v1.placeholder = placeholder
      try:
        receiver = self._serving_input_fn()
      finally:
        _v1.placeholder = original
    if isinstance(receiver, tuple) and not hasattr(receiver, 'features'):
      tensors = receiver[1]
    else:
      tensors = receiver.receiver_tensors
      if getattr(receiver, 'receiver_tensors_alternatives', None):
        self._note('unconverted', 'receiver_tensors_alternatives',
                   'serving input fn', 'add a signature per alternative in '
                   'model.py')
    if not isinstance(tensors, dict):
      tensors = {'input': tensors}
    index = {id(t): i for i, t in enumerate(made)}
    receiver_inputs = []
    for key, tensor in sorted(tensors.items()):
      if id(tensor) not in index:
        raise RefusedError(
            f'the serving input function\'s receiver tensor {key!r} is not '
            'a tf.compat.v1.placeholder; make each receiver tensor a '
            'placeholder.')
      receiver_inputs.append(facts_lib.ReceiverInput(
          key=key, dtype=tensor.dtype.name,
          shape=tensor.shape.as_list() if tensor.shape.rank is not None
          else None, placeholder_index=index[id(tensor)]))
    if len(receiver_inputs) != len(made):
      raise RefusedError(
          f'the serving input function makes {len(made)} placeholders but '
          f'receives {len(receiver_inputs)}; make every placeholder a '
          'receiver tensor.')
    return receiver_inputs, 'serving_input_fn'


def _reads_global_step(tensor):
  """Whether `tensor` is global_step or a cast/read of it."""
  pending, seen = [tensor], set()
  while pending:
    current = pending.pop()
    op = getattr(current, 'op', None)
    if op is None or id(op) in seen:
      continue
    seen.add(id(op))
    if op.name.split('/')[0] == 'global_step':
      return True
    if op.type in ('Cast', 'Identity', 'ReadVariableOp', 'VarHandleOp'):
      pending.extend(op.inputs)
  return False


def _learning_rates(graph, rate, params):
  """[[step, learning rate]] of the model_fn's learning-rate tensor at a
  few global steps (run in the TF1 graph with the step fed), for writing it
  as a schedule; [] when it reads anything but the global step."""
  total = int(params.get('train_steps') or 1000)
  steps = sorted({0, 1, 10, 100, 1000, total // 4, total // 2, total,
                  2 * total} - {s for s in (10, 100, 1000) if s > 2 * total})
  try:
    with graph.as_default(), _v1.Session(graph=graph) as session:
      step = _v1.train.get_global_step()
      table = []
      for value in steps:
        session.run(step.initializer)
        session.run(step.assign(value))
        table.append([value, float(session.run(rate))])
      return table
  except (tf.errors.OpError, TypeError, ValueError):
    return []


def _precision(graph):
  for op in graph.get_operations():
    for output in op.outputs:
      if output.dtype == tf.bfloat16:
        return 'bfloat16'
  return 'float32'


def _refuse_tpu_only(graph):
  for op in graph.get_operations():
    if op.type in _TPU_ONLY_OPS:
      raise RefusedError(
          f'the model_fn builds {op.type} ({op.name}), which only a TPU '
          'runs; build it with use_tpu=False (params["use_tpu"]) to '
          'migrate.')


def _plain(value):
  """A Python number or bool of a numpy scalar."""
  if hasattr(value, 'item'):
    return value.item()
  return value


def _keras_metric(name, bound):
  """(constructor, keyword arguments) of the tf_keras metric standing for
  tf.compat.v1.metrics.<name> called with `bound`; ('', {}) if none does
  exactly."""
  keras = facts_lib.CONVERTED_METRICS.get(name, '')
  arguments = {}
  if name == 'auc':
    curve = bound.get('curve', 'ROC')
    summation = bound.get('summation_method', 'trapezoidal')
    if curve != 'ROC' or summation not in ('trapezoidal',
                                           'careful_interpolation'):
      return '', {}
    arguments = {'num_thresholds': int(bound.get('num_thresholds', 200)),
                 'curve': 'ROC', 'summation_method': 'interpolation'}
  elif name in ('precision', 'recall'):
    arguments = {'thresholds': 0.0}
  elif name == 'recall_at_k' and bound.get('class_id') is not None:
    return '', {}
  return keras, arguments
