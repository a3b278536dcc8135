"""Estimator names for model_fns on every TF: real ones or the stand-ins."""

import pytest
import tensorflow as tf

from tests import testutil
from trainer.compat import estimator as estimator_compat


def test_has_estimator_means_the_real_tpu_estimator():
  # TensorFlow shipped tf.estimator up to 2.15 and removed it in 2.16.
  version = tuple(int(p) for p in tf.__version__.split('.')[:2])
  assert estimator_compat.has_estimator() == (version < (2, 16))
  if estimator_compat.has_estimator():  # The real one, not a stand-in.
    module = tf.compat.v1.estimator.tpu.TPUEstimator.__module__
    assert module.startswith('tensorflow_estimator.'), module


def test_model_fn_names_exist_after_install():
  assert not estimator_compat.install()  # conftest installed them already.
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


@pytest.mark.skipif(testutil.HAS_ESTIMATOR,
                    reason='Estimator exists: its own spec types validate.')
def test_stand_in_spec_rejects_unknown_mode():
  with pytest.raises(ValueError, match='mode must be one of'):
    estimator_compat.TPUEstimatorSpec(mode='training')
