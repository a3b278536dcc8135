"""Whether this TensorFlow has the real Estimator, and the Estimator names
model code uses on every TensorFlow.

TensorFlow <= 2.15 ships tf.estimator (TPUEstimator included); later ones do
not. `has_estimator()` tells, whatever the facade (trainer/facade) has put
in its place. `ModeKeys`, `EstimatorSpec` and `TPUEstimatorSpec` are the
real classes where they exist (TPUEstimator checks the spec's class), else
trainer.api's, the very classes the facade publishes under tf.estimator.
Importing this module changes nothing.
"""

import importlib

import tensorflow as tf

from trainer.api import specs as _specs

# Set on every module the facade creates (trainer/facade/install.py).
FACADE_MARK = '_trainer_legacy_facade'


def has_estimator():
  """True when this TensorFlow ships the real TPUEstimator (not the facade)."""
  importlib.import_module('tensorflow.compat.v1')
  module = getattr(tf.compat.v1, 'estimator', None)
  if module is None or getattr(module, FACADE_MARK, False):
    return False
  return hasattr(getattr(module, 'tpu', None), 'TPUEstimator')


if has_estimator():
  ModeKeys = tf.estimator.ModeKeys
  EstimatorSpec = tf.estimator.EstimatorSpec
  TPUEstimatorSpec = tf.compat.v1.estimator.tpu.TPUEstimatorSpec
else:
  ModeKeys = _specs.ModeKeys
  EstimatorSpec = _specs.EstimatorSpec
  TPUEstimatorSpec = _specs.TPUEstimatorSpec

