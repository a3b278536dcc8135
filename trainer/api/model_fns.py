"""A model_fn's result checked where the runners and the facade call it.

`call_model_fn` calls a model_fn as Estimator does
(trainer.compat.estimator_calls) and raises ModelFnResultError, one line
saying what to return, when it returns a dict where a spec belongs (a
known misuse whose raw failure is `'dict' object has no attribute
'_replace'` deep in a runner). `model_fn_misuse` gives the same line for
TensorFlow 2.15's own Estimator/TPUEstimator failing on such a model_fn.
"""

from trainer.api import errors
from trainer.compat import estimator_calls


class ModelFnResultError(errors.TrainerError, ValueError):
  """A model_fn returned a dict where an EstimatorSpec belongs (a known
  misuse); the message says what to return instead."""


_RETURN_A_SPEC = (
    'return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, '
    '...) from it (tf.compat.v1.estimator.tpu.TPUEstimatorSpec under '
    'TPUEstimator)')


def call_model_fn(model_fn, features, labels, mode, params, config=None):
  """estimator_calls.call_model_fn's result; ModelFnResultError if it is a
  dict (where a spec belongs)."""
  result = estimator_calls.call_model_fn(model_fn, features, labels, mode,
                                         params, config)
  if isinstance(result, dict):
    name = getattr(model_fn, '__qualname__', None) or repr(model_fn)
    raise ModelFnResultError(
        f'model_fn should return an EstimatorSpec. model_fn {name} '
        f'returned a dict (keys: {", ".join(sorted(map(str, result)))}): '
        f'{_RETURN_A_SPEC}.')
  return result


def model_fn_misuse(error):
  """One line saying what to do when `error` is TensorFlow 2.15's
  Estimator or TPUEstimator failing on a model_fn that returned something
  else than a spec (`'dict' object has no attribute '_replace'`,
  `model_fn should return an EstimatorSpec.`), else None."""
  text = str(error)
  if isinstance(error, ModelFnResultError):
    return text
  if isinstance(error, AttributeError) and text.startswith(
      "'dict' object has no attribute"):
    return ('the model_fn returned a dict, not a TPUEstimatorSpec: '
            f'{_RETURN_A_SPEC}.')
  if isinstance(error, ValueError) and text == (
      'model_fn should return an EstimatorSpec.'):
    return ('the model_fn returned something else than an EstimatorSpec '
            f'(a dict?): {_RETURN_A_SPEC}.')
  return None
