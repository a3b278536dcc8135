"""get_variable(partitioner=...) under a MirroredStrategy of two replicas,
as TF 2.15's Estimator runs it: TensorFlow disables the partitioner under a
tf.distribute strategy (both TF 2.15's Estimator and the facade log
'Partitioned variables are disabled when using current
tf.distribute.Strategy'), so the checkpoint holds one unpartitioned `w`,
and training gives the same values.

WEIGHTS is what the real Estimator on TF 2.15 trained (4 steps of gradient
descent from a constant initial value, the same batches); the legacy lane
checks the real Estimator still gives it, the facade's lanes that the
facade does.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil

WEIGHTS = [0.6809054613113403, 0.6632047891616821, 0.6388293504714966,
           0.62529456615448]


def input_fn():
  x = np.random.RandomState(0).rand(64, 4).astype('float32')
  return tf.data.Dataset.from_tensor_slices(
      ({'x': x}, x.sum(1, keepdims=True))).repeat().batch(8)


def model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable(
      'w', [4, 1], partitioner=tf.compat.v1.fixed_size_partitioner(2),
      initializer=tf.compat.v1.constant_initializer(0.1))
  loss = tf.compat.v1.losses.mean_squared_error(
      labels, tf.matmul(features['x'], w))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def train_and_check(model_dir):
  strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
  config = tf.estimator.RunConfig(
      train_distribute=strategy, model_dir=model_dir,
      session_config=tf.compat.v1.ConfigProto(device_count={'CPU': 2}))
  estimator = tf.estimator.Estimator(model_fn, config=config)
  estimator.train(input_fn, max_steps=4)
  assert dict(tf.train.list_variables(model_dir)) == {
      'global_step': [], 'w': [4, 1]}
  np.testing.assert_allclose(estimator.get_variable_value('w').ravel(),
                             WEIGHTS, rtol=1e-6)


@pytest.mark.parametrize('side', [
    pytest.param('real', marks=testutil.requires_estimator),
    pytest.param('facade', marks=testutil.facade_lanes)])
def test_partitioned_variable_under_two_replicas_as_tf215(side, tmp_path):
  del side  # The lane decides: TF 2.15's Estimator or the facade.
  testutil.call_on_cpu_devices(2, train_and_check, str(tmp_path / 'model'))
