"""Mode keys and the spec types a model_fn returns, for TF without Estimator.

`TPUEstimatorSpec` and `EstimatorSpec` keep Estimator's fields and checks
(mode known, the fields a mode needs present, hooks are SessionRunHooks);
hook fields are tuples as in Estimator, `scaffold` stays None when unset.
"""

import collections

import tensorflow as tf


class ModeKeys:
  """The values of tf.estimator.ModeKeys."""
  TRAIN = 'train'
  EVAL = 'eval'
  PREDICT = 'infer'


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)

_TPU_SPEC_FIELDS = ('mode', 'predictions', 'loss', 'train_op', 'eval_metrics',
                    'export_outputs', 'scaffold_fn', 'host_call',
                    'training_hooks', 'evaluation_hooks', 'prediction_hooks')
_SPEC_FIELDS = ('mode', 'predictions', 'loss', 'train_op', 'eval_metric_ops',
                'export_outputs', 'training_chief_hooks', 'training_hooks',
                'scaffold', 'evaluation_hooks', 'prediction_hooks')


def _check_mode(kind, mode):
  if mode not in _MODES:
    raise ValueError(f'{kind}: mode must be one of train, eval, infer; got '
                     f'{mode!r}.')


def _hooks(kind, field, hooks):
  """hooks as a tuple; TypeError naming the field if one is no SessionRunHook."""
  hooks = tuple(hooks or ())
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise TypeError(f'{kind}.{field}: all hooks must be SessionRunHook '
                      f'instances, given: {hook!r}')
  return hooks


def _check_pair(kind, field, value):
  if value is not None and not (isinstance(value, (tuple, list)) and
                                len(value) == 2 and callable(value[0])):
    raise ValueError(f'{kind}.{field} must be a (function, tensors) pair; got '
                     f'{value!r}.')


class TPUEstimatorSpec(
    collections.namedtuple('TPUEstimatorSpec', _TPU_SPEC_FIELDS)):
  """What a TPUEstimator model_fn returns; every field but mode optional."""

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metrics=None, export_outputs=None, scaffold_fn=None,
              host_call=None, training_hooks=None, evaluation_hooks=None,
              prediction_hooks=None):
    _check_mode('TPUEstimatorSpec', mode)
    _check_pair('TPUEstimatorSpec', 'eval_metrics', eval_metrics)
    _check_pair('TPUEstimatorSpec', 'host_call', host_call)
    kind = 'TPUEstimatorSpec'
    return super().__new__(
        cls, mode, predictions, loss, train_op, eval_metrics, export_outputs,
        scaffold_fn, host_call,
        _hooks(kind, 'training_hooks', training_hooks),
        _hooks(kind, 'evaluation_hooks', evaluation_hooks),
        _hooks(kind, 'prediction_hooks', prediction_hooks))


class EstimatorSpec(collections.namedtuple('EstimatorSpec', _SPEC_FIELDS)):
  """What an Estimator model_fn returns; the fields its mode needs set."""

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metric_ops=None, export_outputs=None,
              training_chief_hooks=None, training_hooks=None, scaffold=None,
              evaluation_hooks=None, prediction_hooks=None):
    _check_mode('EstimatorSpec', mode)
    if mode == ModeKeys.TRAIN and train_op is None:
      raise ValueError('EstimatorSpec: missing train_op in TRAIN mode.')
    if mode in (ModeKeys.TRAIN, ModeKeys.EVAL) and loss is None:
      raise ValueError(f'EstimatorSpec: missing loss in {mode} mode.')
    if mode == ModeKeys.PREDICT and predictions is None:
      raise ValueError('EstimatorSpec: missing predictions in infer mode.')
    for name, value in dict(eval_metric_ops or {}).items():
      is_metric = callable(getattr(value, 'result', None))  # A Keras Metric.
      if not is_metric and not (isinstance(value, (tuple, list)) and
                                len(value) == 2):
        raise TypeError(f'EstimatorSpec.eval_metric_ops[{name!r}] must be a '
                        '(value, update_op) pair or a Metric; got '
                        f'{value!r}.')
    kind = 'EstimatorSpec'
    return super().__new__(
        cls, mode, predictions, loss, train_op, eval_metric_ops,
        export_outputs,
        _hooks(kind, 'training_chief_hooks', training_chief_hooks),
        _hooks(kind, 'training_hooks', training_hooks), scaffold,
        _hooks(kind, 'evaluation_hooks', evaluation_hooks),
        _hooks(kind, 'prediction_hooks', prediction_hooks))
