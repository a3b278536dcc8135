"""ModeKeys and what a model_fn returns: EstimatorSpec and TPUEstimatorSpec.

Same fields, defaults and checks as tensorflow_estimator 2.15's, whose
contract they implement on any TensorFlow:
  EstimatorSpec: TRAIN needs loss and train_op, EVAL loss, PREDICT
    predictions; loss must have one element and is reshaped to a scalar;
    tensors must come from the graph the model_fn builds; hooks must be
    SessionRunHooks; eval_metric_ops a dict of (value, update_op) pairs or
    Keras Metrics (in a TF1 graph a Metric becomes (result, update) and its
    variables join LOCAL_VARIABLES, as Estimator does); scaffold defaults to
    an empty Scaffold; in PREDICT, export_outputs defaults to a PredictOutput
    of the predictions. The mode cannot be changed by _replace.
  TPUEstimatorSpec: the same fields but eval_metrics=(metric_fn, tensors),
    scaffold_fn and host_call=(fn, tensors); as_estimator_spec() gives the
    EstimatorSpec TPUEstimator runs off TPU (metric_fn and host_call called
    in the graph, scaffold_fn called).
Under a tf.function trace (the tf2 runner) Keras Metrics stay Metric objects.
"""

import collections

import tensorflow as tf

from trainer.compat import tf_private


class ModeKeys:
  """The values of tf.estimator.ModeKeys."""
  TRAIN = 'train'
  EVAL = 'eval'
  PREDICT = 'infer'


LOSS_METRIC_KEY = 'loss'
_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
_NOT_IN_GRAPH = (
    '{0} with "{1}" must be from the default graph. Possible causes of this '
    'error include: \n\n1) {0} was created outside the context of the default '
    'graph.\n\n2) The object passed through to EstimatorSpec was not created '
    'in the most recent call to "model_fn".')


def _in_graph_mode():
  """True when building a TF1 graph (not eagerly, not in a tf.function)."""
  return not tf.executing_eagerly() and not tf_private.inside_function()


def _check_graph(value, what, key=None):
  """ValueError if `value` is not from the graph being built (TF1 only)."""
  if _in_graph_mode() and value.graph is not tf.compat.v1.get_default_graph():
    name = value.name if key is None else f'{key}: {value.name}'
    raise ValueError(_NOT_IN_GRAPH.format(what, name))


def _is_tensor(value):
  return isinstance(value, tf_private.TENSOR_TYPES)


def _tensor(value, name):
  if not _is_tensor(value):
    raise TypeError(f'{name} must be Tensor, given: {value}')
  return value


def _train_op(train_op, mode):
  if train_op is None:
    if mode == ModeKeys.TRAIN:
      raise ValueError('Missing train_op.')
    return None
  if not isinstance(train_op, (tf.Operation,) + tf_private.TENSOR_TYPES):
    raise TypeError(f'train_op must be Operation or Tensor, given: {train_op}')
  if isinstance(train_op, tf.Variable):
    train_op = train_op.op
  _check_graph(train_op, 'train_op')
  return train_op


def _loss(loss, mode):
  if loss is None:
    if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
      raise ValueError('Missing loss.')
    return None
  loss = _tensor(loss, 'loss')
  if loss.shape.num_elements() not in (None, 1):
    raise ValueError(f'Loss must be scalar, given: {loss}')
  if not loss.shape.is_compatible_with(tf.TensorShape([])):
    loss = tf.reshape(loss, [])
  _check_graph(loss, 'loss')
  return loss


def _predictions(predictions, mode):
  if predictions is None:
    if mode == ModeKeys.PREDICT:
      raise ValueError('Missing predictions.')
    return {}
  if isinstance(predictions, dict):
    predictions = {k: _tensor(v, f'predictions[{k}]')
                   for k, v in predictions.items()}
    for key, value in predictions.items():
      _check_graph(value, 'prediction values', key)
    return predictions
  predictions = _tensor(predictions, 'predictions')
  _check_graph(predictions, 'prediction values')
  return predictions


def _hooks(hooks):
  hooks = tuple(hooks or ())
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise TypeError(
          f'All hooks must be SessionRunHook instances, given: {hook}')
  return hooks


def is_keras_metric(value):
  """A Keras Metric object (tf-keras, Keras 3 or TF's own), by its API."""
  return callable(getattr(value, 'update_state', None)) and callable(
      getattr(value, 'result', None))


def _eval_metric_ops(eval_metric_ops):
  if eval_metric_ops is None:
    return {}
  if not isinstance(eval_metric_ops, dict):
    raise TypeError(f'eval_metric_ops must be a dict, given: {eval_metric_ops}')
  eval_metric_ops = dict(eval_metric_ops)
  graph_mode = _in_graph_mode()
  for key, value in eval_metric_ops.items():
    if is_keras_metric(value):
      if graph_mode and not getattr(value, 'updates', None):
        raise ValueError(
            f'Please call update_state(...) on the "{value.name}" metric')
    elif not isinstance(value, tuple) or len(value) != 2:
      raise TypeError('Values of eval_metric_ops must be (metric_value, '
                      f'update_op) tuples, given: {value} for key: {key}')
  if not graph_mode:
    return eval_metric_ops
  graph = tf.compat.v1.get_default_graph()
  for key, value in eval_metric_ops.items():
    if is_keras_metric(value):
      parts = list(value.updates) + [value.result()]
    else:
      parts = tf.nest.flatten(value)
    for part in parts:
      if part.graph is not graph:
        raise ValueError(_NOT_IN_GRAPH.format('eval_metric_ops',
                                              f'{key}: {part.name}'))
  for key, value in list(eval_metric_ops.items()):
    if is_keras_metric(value):
      for collection in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                         tf.compat.v1.GraphKeys.METRIC_VARIABLES):
        present = graph.get_collection(collection)
        for variable in value.variables:
          if not any(variable is v for v in present):
            graph.add_to_collection(collection, variable)
      eval_metric_ops[key] = (value.result(), value.updates[0])
  return eval_metric_ops


def _scaffold(scaffold):
  scaffold = scaffold or tf.compat.v1.train.Scaffold()
  if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
    raise TypeError(f'scaffold must be tf.train.Scaffold. Given: {scaffold}')
  return scaffold


def _export_outputs(export_outputs, predictions, mode):
  if mode != ModeKeys.PREDICT:
    return export_outputs
  return tf_private.export_utils().get_export_outputs(export_outputs,
                                                      predictions)


_SPEC_FIELDS = ('mode', 'predictions', 'loss', 'train_op', 'eval_metric_ops',
                'export_outputs', 'training_chief_hooks', 'training_hooks',
                'scaffold', 'evaluation_hooks', 'prediction_hooks')


class EstimatorSpec(collections.namedtuple('EstimatorSpec', _SPEC_FIELDS)):
  """What an Estimator model_fn returns, validated (see module docstring)."""

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metric_ops=None, export_outputs=None,
              training_chief_hooks=None, training_hooks=None, scaffold=None,
              evaluation_hooks=None, prediction_hooks=None):
    train_op = _train_op(train_op, mode)
    loss = _loss(loss, mode)
    predictions = _predictions(predictions, mode)
    export_outputs = _export_outputs(export_outputs, predictions, mode)
    return super().__new__(
        cls, mode=mode, predictions=predictions, loss=loss,
        train_op=train_op, eval_metric_ops=_eval_metric_ops(eval_metric_ops),
        export_outputs=export_outputs,
        training_chief_hooks=_hooks(training_chief_hooks),
        training_hooks=_hooks(training_hooks), scaffold=_scaffold(scaffold),
        evaluation_hooks=_hooks(evaluation_hooks),
        prediction_hooks=_hooks(prediction_hooks))

  def _replace(self, **kwargs):
    if 'mode' in kwargs and kwargs['mode'] != self.mode:
      raise ValueError('mode of EstimatorSpec cannot be changed.')
    fields = dict(zip(self._fields, self))
    fields.update(kwargs)
    return EstimatorSpec(**fields)


def _fn_arg_count(fn):
  """(number of positional args fn takes, whether it takes *args)."""
  import inspect  # pylint: disable=g-import-not-at-top
  try:
    parameters = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError):
    return None, True
  varargs = any(p.kind == p.VAR_POSITIONAL for p in parameters)
  count = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
              for p in parameters)
  return count, varargs


def _check_host_call(name, host_call):
  """TPUEstimator's checks of eval_metrics / host_call: (fn, tensors)."""
  if not isinstance(host_call, (tuple, list)):
    raise ValueError(f'{name} should be tuple or list')
  if len(host_call) != 2:
    raise ValueError(f'{name} should have two elements.')
  fn, tensors = host_call
  if not callable(fn):
    raise TypeError(f'{name}[0] should be callable.')
  if not isinstance(tensors, (tuple, list, dict)):
    raise ValueError(f'{name}[1] should be tuple or list, or dict.')
  if isinstance(tensors, (tuple, list)):
    count, varargs = _fn_arg_count(fn)
    if count is not None and not varargs and len(tensors) != count:
      raise RuntimeError(
          f'In TPUEstimatorSpec.{name}, length of tensors {len(tensors)} does '
          f'not match method args of the function, which takes {count}.')


def call_host_fn(fn, tensors):
  """fn(*tensors) for a list or tuple, fn(**tensors) for a dict."""
  if isinstance(tensors, dict):
    return fn(**tensors)
  return fn(*tensors)


_TPU_SPEC_FIELDS = ('mode', 'predictions', 'loss', 'train_op', 'eval_metrics',
                    'export_outputs', 'scaffold_fn', 'host_call',
                    'training_hooks', 'evaluation_hooks', 'prediction_hooks')


class TPUEstimatorSpec(
    collections.namedtuple('TPUEstimatorSpec', _TPU_SPEC_FIELDS)):
  """What a TPUEstimator model_fn returns (see module docstring)."""

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metrics=None, export_outputs=None, scaffold_fn=None,
              host_call=None, training_hooks=None, evaluation_hooks=None,
              prediction_hooks=None):
    for name, value in (('eval_metrics', eval_metrics),
                        ('host_call', host_call)):
      if value is not None:
        _check_host_call(name, value)
    training_hooks = tuple(training_hooks or ())
    evaluation_hooks = tuple(evaluation_hooks or ())
    prediction_hooks = tuple(prediction_hooks or ())
    _hooks(training_hooks + evaluation_hooks + prediction_hooks)
    return super().__new__(
        cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metrics=eval_metrics, export_outputs=export_outputs,
        scaffold_fn=scaffold_fn, host_call=host_call,
        training_hooks=training_hooks, evaluation_hooks=evaluation_hooks,
        prediction_hooks=prediction_hooks)

  def as_estimator_spec(self):
    """The EstimatorSpec TPUEstimator runs off TPU: metric_fn and host_call
    called now (in the current graph), host_call's ops run every step by a
    hook, scaffold_fn called."""
    return tpu_spec_as_estimator_spec(self)


def tpu_spec_as_estimator_spec(spec):
  """as_estimator_spec() of any TPUEstimatorSpec (ours or the real one's
  fields): see TPUEstimatorSpec.as_estimator_spec."""
  eval_metric_ops = None
  if spec.eval_metrics is not None:
    eval_metric_ops = call_host_fn(*spec.eval_metrics)
  hooks = ()
  if spec.host_call is not None:
    hooks = (HostCallHook(call_host_fn(*spec.host_call)),)
  scaffold = spec.scaffold_fn() if spec.scaffold_fn else None
  return EstimatorSpec(
      mode=spec.mode, predictions=spec.predictions, loss=spec.loss,
      train_op=spec.train_op, eval_metric_ops=eval_metric_ops,
      export_outputs=spec.export_outputs, scaffold=scaffold,
      training_hooks=tuple(spec.training_hooks) + hooks,
      evaluation_hooks=tuple(spec.evaluation_hooks) + hooks,
      prediction_hooks=tuple(spec.prediction_hooks) + hooks)


class HostCallHook(tf.compat.v1.train.SessionRunHook):
  """Runs a host_call's ops with every step off TPU, as TPUEstimator does:
  initialises the TF2 summary writers the graph made, fetches the ops each
  step and flushes the writers at the end."""

  def __init__(self, tensors):
    self._tensors = tensors
    self._init_ops = []
    self._flush_ops = []

  def begin(self):
    self._init_ops = tf_private.summary_writer_init_ops()
    self._flush_ops = [tf_private.flush_summary_writer(op.inputs[0])
                       for op in self._init_ops]

  def after_create_session(self, session, coord):
    del coord
    session.run(self._init_ops)

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._tensors)

  def end(self, session):
    session.run(self._flush_ops)
