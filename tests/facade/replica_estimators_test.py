"""Estimators with RunConfig(train_distribute=, eval_distribute=
MirroredStrategy over 2 CPUs), as the real Estimator (TF 2.15) runs them and
through the facade (its tf2 runner), in one process: a second Estimator with
strategies of its own and variables of other shapes trains and evaluates
after the first; a model_fn making two Keras metrics of one class (as every
head does) evaluates over the replicas; a model_fn's own `loss` summary is
the only one (Estimator adds none).

Linear model, fixed initial weights, 16 examples in batches of 4: each
replica trains on a batch of the input_fn per step (a step sees 8), and
evaluation sees 4 full batches, so Estimator's evaluation over replicas is
the one-device result, computed here in numpy.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.api import specs
from trainer.facade import estimator as estimator_lib
from trainer.facade import run_config

v1 = tf.compat.v1
ENGINES = [pytest.param('real', marks=testutil.requires_estimator),
           pytest.param('facade', marks=testutil.facade_lanes)]
X = np.linspace(-1., 1., 48, dtype=np.float32).reshape(16, 3)
Y = (X @ np.array([[0.5], [-1.], [2.]], np.float32) + 0.25).astype(np.float32)
BATCH, STEPS, LEARNING_RATE = 4, 3, 0.1


def _model_fn(features, labels, mode, params):
  """pred = mean over columns of x @ w, w: [3, width] from ones."""
  w = v1.get_variable('w', [3, params['width']],
                      initializer=v1.ones_initializer())
  pred = tf.reduce_mean(tf.matmul(features['x'], w), axis=1, keepdims=True)
  loss = tf.reduce_mean(tf.square(pred - labels))
  spec = params['spec']
  if mode == 'eval':
    mean_pred = tf.keras.metrics.Mean(name='mean_pred')
    mean_pred.update_state(pred)
    mean_label = tf.keras.metrics.Mean(name='mean_label')
    mean_label.update_state(labels)
    return spec(mode, loss=loss, eval_metric_ops={
        'mean_pred': mean_pred, 'mean_label': mean_label})
  v1.summary.scalar('loss', loss)  # As a head: Estimator adds no other.
  train_op = v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(
      loss, v1.train.get_global_step())
  return spec(mode, loss=loss, train_op=train_op)


def _input_fn(repeat):
  def input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(({'x': X}, Y))
    return (dataset.repeat() if repeat else dataset).batch(BATCH)
  return input_fn


def _expected(width):
  """(w, eval metrics) in numpy: each step averages the gradients of two
  batches (a step's replicas), in the input's order; each of the `width`
  equal columns of w gets 1/width of the gradient (pred is their mean)."""
  w = np.ones([3, 1], np.float64)
  batches = [slice(i, i + BATCH) for i in range(0, len(X), BATCH)]
  for step in range(STEPS):
    rows = np.concatenate([np.arange(len(X))[batches[(2 * step + r) % 4]]
                           for r in range(2)])
    x, y = X[rows].astype(np.float64), Y[rows]
    w -= LEARNING_RATE * 2. * x.T @ (x @ w - y) / len(rows) / width
  pred = X @ w
  metrics = {'loss': np.mean([np.mean((pred[b] - Y[b]) ** 2)
                              for b in batches]),
             'mean_pred': pred.mean(), 'mean_label': Y.mean(),
             'global_step': STEPS}
  return np.tile(w, [1, width]), metrics


def _summary_tags(model_dir):
  tags = set()
  for path in tf.io.gfile.glob(os.path.join(model_dir, 'events.out.*')):
    for event in v1.train.summary_iterator(path):
      tags.update(value.tag for value in event.summary.value)
  return tags


def train_two_estimators(engine, work_dir):
  """On 2 CPUs: an Estimator of width 1, then one of width 2, each with
  strategies of its own, train and evaluate in this process."""
  real = engine == 'real'
  estimator_cls = tf.estimator.Estimator if real else estimator_lib.Estimator
  config_cls = tf.estimator.RunConfig if real else run_config.RunConfig
  spec = tf.estimator.EstimatorSpec if real else specs.EstimatorSpec
  for width in (1, 2):
    config = config_cls(
        train_distribute=tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1']),
        eval_distribute=tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1']),
        save_summary_steps=1, log_step_count_steps=1,
        # A Session sees 2 CPUs only if asked; the real Estimator's
        # all-reduce needs more inter-op threads than 2 cores give.
        session_config=v1.ConfigProto(device_count={'CPU': 2},
                                      inter_op_parallelism_threads=8,
                                      allow_soft_placement=True))
    model_dir = os.path.join(work_dir, f'width_{width}')
    est = estimator_cls(_model_fn, model_dir=model_dir, config=config,
                        params={'width': width, 'spec': spec})
    est.train(_input_fn(repeat=True), steps=STEPS)
    metrics = est.evaluate(_input_fn(repeat=False))
    w, expected = _expected(width)
    np.testing.assert_allclose(est.get_variable_value('w'), w, rtol=1e-5)
    assert set(metrics) == set(expected), metrics
    for key, value in expected.items():
      # mean_pred (~1e-3) is a mean of float32 predictions of order 1 that
      # cancel: its rounding error is absolute (~1e-7), not relative.
      assert metrics[key] == pytest.approx(value, rel=1e-5, abs=1e-6), (
          width, key, metrics[key])
    assert _summary_tags(model_dir) == {'loss', 'global_step/sec'}, width


@pytest.mark.parametrize('engine', ENGINES)
def test_two_estimators_with_their_own_strategies(engine, tmp_path):
  testutil.call_on_cpu_devices(2, train_two_estimators, engine,
                               str(tmp_path))
