"""Estimator names for model_fns on every TF: real ones or the stand-ins."""

import tensorflow as tf

from trainer.api import estimator_names as estimator_compat


def test_has_estimator_means_the_real_tpu_estimator():
  # TensorFlow shipped tf.estimator up to 2.15 and removed it in 2.16.
  version = tuple(int(p) for p in tf.__version__.split('.')[:2])
  assert estimator_compat.has_estimator() == (version < (2, 16))
  if estimator_compat.has_estimator():  # The real one, not a stand-in.
    module = tf.compat.v1.estimator.tpu.TPUEstimator.__module__
    assert module.startswith('tensorflow_estimator.'), module


def test_model_fn_names_are_the_real_ones_or_the_facades():
  assert estimator_compat.TPUEstimatorSpec is (
      tf.compat.v1.estimator.tpu.TPUEstimatorSpec)  # conftest installed it.
  assert estimator_compat.ModeKeys.PREDICT == 'infer'
  keys = tf.estimator.ModeKeys
  assert (keys.TRAIN, keys.EVAL, keys.PREDICT) == ('train', 'eval', 'infer')
  assert tf.compat.v1.estimator.ModeKeys.PREDICT == 'infer'
  spec = tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
      mode=keys.EVAL, loss=tf.constant(1.0))
  assert spec.mode == 'eval' and spec.train_op is None
  assert spec.eval_metrics is None and spec.scaffold_fn is None
  spec = tf.estimator.EstimatorSpec(mode=keys.PREDICT,
                                    predictions={'x': tf.constant(1)})
  assert set(spec.predictions) == {'x'}


