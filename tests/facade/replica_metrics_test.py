"""A model_fn that builds its train_op and tf.compat.v1.metrics in every
mode (as many do: `minimize(loss, global_step)` and `eval_metric_ops`
unconditionally), trained and evaluated under a MirroredStrategy of two
replicas, as TF 2.15's Estimator runs it.

Before: training under the strategy failed on the metric accumulators
(UnliftableError: the strategy could not make them inside the step), and
evaluation with `eval_distribute` on the global step a hook read while the
step was built. RESULTS is what the real Estimator on TF 2.15 gave (the
legacy lane checks it still does; the facade's lanes that the facade does):
evaluation on one device after training under the strategy, and with
`eval_distribute` the same strategy.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil

RESULTS = {
    'one_device': {'loss': 0.47808242, 'mae': 0.661965, 'global_step': 4},
    'mirrored': {'loss': 0.52651054, 'mae': 0.6989654, 'global_step': 4},
}


def input_fn():
  x = np.random.RandomState(0).rand(64, 4).astype('float32')
  return tf.data.Dataset.from_tensor_slices(
      ({'x': x}, x.sum(1, keepdims=True))).repeat(2).batch(8)


def model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable(
      'w', [4, 1], initializer=tf.compat.v1.constant_initializer(0.1))
  predictions = tf.matmul(features['x'], w)
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(
      mode, loss=loss, train_op=train_op, eval_metric_ops={
          'mae': tf.compat.v1.metrics.mean_absolute_error(labels,
                                                          predictions)})


def train_and_evaluate(root):
  for name, expected in RESULTS.items():
    strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
    config = tf.estimator.RunConfig(
        train_distribute=strategy, model_dir=f'{root}/{name}',
        eval_distribute=strategy if name == 'mirrored' else None,
        session_config=tf.compat.v1.ConfigProto(
            device_count={'CPU': 2}, inter_op_parallelism_threads=8))
    estimator = tf.estimator.Estimator(model_fn, config=config)
    estimator.train(input_fn, max_steps=4)
    results = estimator.evaluate(input_fn, steps=3)
    assert sorted(results) == sorted(expected), (name, results)
    for key, value in expected.items():
      np.testing.assert_allclose(results[key], value, rtol=1e-6,
                                 err_msg=f'{name} {key}')


@pytest.mark.parametrize('side', [
    pytest.param('real', marks=testutil.requires_estimator),
    pytest.param('facade', marks=testutil.facade_lanes)])
def test_metrics_and_train_op_in_every_mode_under_two_replicas(side,
                                                               tmp_path):
  del side  # The lane decides: TF 2.15's Estimator or the facade.
  testutil.call_on_cpu_devices(2, train_and_evaluate, str(tmp_path))
