"""tf.estimator.add_metrics of the facade: an Estimator with more metrics.

As Estimator's: the new Estimator calls the given one's model_fn and, in
EVAL, adds metric_fn's metrics to the spec's eval_metric_ops (a metric of
the same name replaces the model_fn's). metric_fn takes any of features,
labels, predictions and config, by name, and returns {name: (value,
update_op) or a Keras metric}, as eval_metric_ops does.
"""

from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.facade import estimator as estimator_lib

ModeKeys = specs.ModeKeys
_VALID_METRIC_FN_ARGS = frozenset(
    ('features', 'labels', 'predictions', 'config'))


def add_metrics(estimator, metric_fn):
  """A new Estimator: `estimator`'s model_fn, model_dir, config and warm
  start, with metric_fn's metrics added in evaluation."""
  _verify_metric_fn_args(metric_fn)

  def new_model_fn(features, labels, mode, config):
    spec = estimator.model_fn(features, labels, mode, config)
    if mode != ModeKeys.EVAL:
      return spec
    metrics = dict(spec.eval_metric_ops or {})
    metrics.update(_call_metric_fn(metric_fn, features, labels,
                                   spec.predictions, config))
    return spec._replace(eval_metric_ops=metrics)

  return estimator_lib.Estimator(
      model_fn=new_model_fn, model_dir=estimator.model_dir,
      config=estimator.config,
      warm_start_from=estimator._warm_start_settings)  # pylint: disable=protected-access


def _verify_metric_fn_args(metric_fn):
  args = set(estimator_calls.fn_args(metric_fn))
  if args - _VALID_METRIC_FN_ARGS:
    raise ValueError(f'metric_fn ({metric_fn}) has following not expected '
                     f'args: {sorted(args - _VALID_METRIC_FN_ARGS)}')


def _call_metric_fn(metric_fn, features, labels, predictions, config):
  """metric_fn's metrics, called with the arguments it names."""
  args = set(estimator_calls.fn_args(metric_fn))
  given = {'features': features, 'labels': labels,
           'predictions': predictions, 'config': config}
  return metric_fn(**{k: v for k, v in given.items() if k in args})
