"""One view of what a model_fn returns: TPUEstimatorSpec or EstimatorSpec.

A TPUEstimator model_fn may return either, in any mode (TPUEstimator runs
a plain EstimatorSpec as is when use_tpu=False; PREDICT with export_outputs
is the common case). `normalize` reads both, the real classes (TF 2.15) and
the stand-ins (TF >= 2.16), by their fields:

  TPUEstimatorSpec: eval_metrics=(metric_fn, tensors) run on the host,
                    scaffold_fn, host_call;
  EstimatorSpec:    eval_metric_ops={name: (value, update_op) or Metric}
                    built on the device, scaffold (a Scaffold);
  both:             loss, train_op, predictions, export_outputs,
                    training_hooks / evaluation_hooks / prediction_hooks
                    (and EstimatorSpec's training_chief_hooks).
"""

import dataclasses
from typing import Any, Callable, Optional

TRAIN, EVAL, PREDICT = 'train', 'eval', 'infer'


@dataclasses.dataclass
class Spec:
  """What the tf2 runner uses of a model_fn's spec."""
  mode: str
  loss: Any = None
  train_op: Any = None
  predictions: Any = None
  export_outputs: Optional[dict] = None
  host_call: Optional[tuple] = None  # (fn, tensors), run on the host.
  eval_metrics: Optional[tuple] = None  # (metric_fn, tensors), on the host.
  eval_metric_ops: Optional[dict] = None  # Built in the step (EstimatorSpec).
  scaffold_fn: Optional[Callable[[], Any]] = None  # Returns a Scaffold.
  hooks: tuple = ()  # The SessionRunHooks of this mode.
  chief_hooks: tuple = ()  # TRAIN: EstimatorSpec.training_chief_hooks.
  source: str = 'TPUEstimatorSpec'


def _is_tpu_spec(spec):
  return hasattr(spec, 'scaffold_fn') or hasattr(spec, 'eval_metrics')


def _constant(value):
  return lambda: value


def normalize(spec, mode):
  """The Spec of a model_fn result; TypeError naming what it returned."""
  if not hasattr(spec, 'mode') or not hasattr(spec, 'predictions'):
    raise TypeError('model_fn must return a TPUEstimatorSpec or an '
                    f'EstimatorSpec; it returned {type(spec).__name__}.')
  hooks = {
      TRAIN: tuple(getattr(spec, 'training_hooks', None) or ()),
      EVAL: tuple(getattr(spec, 'evaluation_hooks', None) or ()),
      PREDICT: tuple(getattr(spec, 'prediction_hooks', None) or ()),
  }[mode]
  chief_hooks = tuple(getattr(spec, 'training_chief_hooks', None) or ()
                      ) if mode == TRAIN else ()
  common = dict(mode=mode, loss=spec.loss, train_op=spec.train_op,
                predictions=spec.predictions,
                export_outputs=spec.export_outputs, hooks=hooks,
                chief_hooks=chief_hooks)
  if _is_tpu_spec(spec):
    return Spec(host_call=spec.host_call, eval_metrics=spec.eval_metrics,
                scaffold_fn=spec.scaffold_fn, source='TPUEstimatorSpec',
                **common)
  scaffold = getattr(spec, 'scaffold', None)
  if callable(scaffold) and not hasattr(scaffold, 'saver'):
    scaffold_fn = scaffold  # Legacy code passes a scaffold_fn here too.
  else:
    scaffold_fn = _constant(scaffold) if scaffold is not None else None
  return Spec(eval_metric_ops=dict(spec.eval_metric_ops or {}) or None,
              scaffold_fn=scaffold_fn, source='EstimatorSpec', **common)
