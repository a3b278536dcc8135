"""The one place model code gets the TPUEstimator contract's names from.

The real tf.estimator's classes where TensorFlow has them (<= 2.15), else
the trainer's own (trainer/api, which the Estimator facade also publishes
as tf.estimator): `TPUEstimatorSpec`, `ModeKeys`.
"""

from trainer.api import estimator_names as _estimator

TPUEstimatorSpec = _estimator.TPUEstimatorSpec
ModeKeys = _estimator.ModeKeys
