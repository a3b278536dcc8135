"""Keras 2's loss weighting and TF's weight broadcasting, for the heads.

tf.estimator's v2 heads reduce per-example losses with Keras 2's
`compute_weighted_loss` and broadcast example weights to metric values with
TF's `broadcast_weights`. Neither has a public name: Keras 2 exposes the
first under `tf.keras.__internal__.losses`, TF the second under
`tf.__internal__.ops`. The facade's heads call the very same functions, so
their losses, their dtypes and the reduction Keras records on the graph (v1
optimizers read it to scale a loss across replicas, as Estimator does) are
the reference's. `tf.keras` is Keras 2 wherever the facade runs (tf-keras on
TF >= 2.16, selected by trainer.runtime.startup before TensorFlow is imported).
"""

import tensorflow as tf


def _keras_losses_internal():
  try:
    return tf.keras.__internal__.losses
  except AttributeError as e:
    raise ImportError(
        f'TensorFlow {tf.__version__}: tf.keras is not Keras 2 (no '
        'tf.keras.__internal__.losses); the Estimator heads need tf-keras '
        f'(pip install tf-keras=={tf.__version__.rsplit(".", 1)[0]}.*) '
        'selected with TF_USE_LEGACY_KERAS=1 before TensorFlow is '
        f'imported: {e}') from e


def compute_weighted_loss(losses, sample_weight, reduction):
  """Keras 2's reduction of `losses` weighted by `sample_weight`."""
  return _keras_losses_internal().compute_weighted_loss(
      losses, sample_weight=sample_weight, reduction=reduction)


def broadcast_weights(weights, values):
  """`weights` broadcast to the shape of `values` (ValueError if they
  cannot be)."""
  return tf.compat.v2.__internal__.ops.broadcast_weights(weights, values)
