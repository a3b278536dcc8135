"""eval_metric_ops run as Estimator runs them: every update op on every
batch, every value op once, after the last batch's updates.

The model_fn's metrics: a COCO-style evaluator (a Python object the
model_fn makes; its update op, a numpy_function, accumulates the batch's
predictions; its value op computes over all of them once and caches, as
COCO evaluators do), tf.compat.v1.metrics.mean and accuracy, and a Keras
Mean. Its weights are fixed (learning rate 0), so every value is computed
here in numpy. 20 examples in batches of 8: the last batch is partial.
"""

import re

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.runners import registry as runners

v1 = tf.compat.v1
RUNNERS = [pytest.param('estimator', marks=testutil.requires_estimator), 'tf2']
NUM_EXAMPLES, BATCH = 20, 8
WEIGHTS = np.array([[0.5, -0.3], [0.2, 0.8], [-0.7, 0.1], [0.4, 0.4]],
                   np.float32)
EVALUATORS = []  # Every evaluator the model_fn made in this process.


class Evaluator:
  """Accumulates predictions; evaluates once and caches (COCO-style)."""

  def __init__(self):
    self.predictions = []
    self.updates = 0
    self.evaluations = 0
    self._result = None

  def update(self, predictions):
    self.updates += 1
    self.predictions.extend(predictions.tolist())
    return np.int64(len(self.predictions))

  def evaluate(self):
    self.evaluations += 1
    if self._result is None:
      self._result = np.float32(np.mean(self.predictions))
    return self._result


def _data():
  rng = np.random.RandomState(0)
  x = rng.uniform(-1, 1, size=(NUM_EXAMPLES, 4)).astype(np.float32)
  return x, (x.sum(axis=1) > 0).astype(np.int64)


def input_fn(params):
  x, y = _data()
  dataset = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
  if params['mode'] == 'train':
    return dataset.repeat().batch(params['batch_size'], drop_remainder=True)
  return dataset.batch(params['batch_size'])  # 8, 8, 4 on one device.


def model_fn(features, labels, mode, params):
  del params
  w = v1.get_variable('w', initializer=WEIGHTS)
  logits = tf.matmul(features['x'], w)
  loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))
  if mode == tf.estimator.ModeKeys.TRAIN:
    train_op = v1.train.GradientDescentOptimizer(0.0).minimize(
        loss, global_step=v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
  evaluator = Evaluator()
  EVALUATORS.append(evaluator)
  positive = tf.nn.softmax(logits)[:, 1]
  update = tf.numpy_function(evaluator.update, [positive], tf.int64)
  value = tf.numpy_function(evaluator.evaluate, [], tf.float32)
  keras_mean = tf.keras.metrics.Mean(name='keras_mean')
  keras_mean.update_state(positive)
  return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
      'coco_style': (value, update),
      'v1_mean': v1.metrics.mean(positive),
      'accuracy': v1.metrics.accuracy(labels, tf.argmax(logits, 1)),
      'keras_mean': keras_mean})


def expected_metrics():
  """What Estimator computes on one device, in numpy."""
  x, y = _data()
  logits = x @ WEIGHTS
  logits -= logits.max(axis=1, keepdims=True)
  log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
  positive = np.exp(log_probs[:, 1])
  losses = -log_probs[np.arange(NUM_EXAMPLES), y]
  batches = range(0, NUM_EXAMPLES, BATCH)
  return {
      'loss': np.mean([losses[i:i + BATCH].mean() for i in batches]),
      'coco_style': positive.mean(), 'v1_mean': positive.mean(),
      'keras_mean': positive.mean(),
      'accuracy': np.mean(np.argmax(logits, axis=1) == y),
      'global_step': 1}


def _assert_metrics(got):
  expected = expected_metrics()
  assert set(got) == set(expected)
  for name, value in expected.items():
    assert got[name] == pytest.approx(value, rel=1e-5, abs=1e-6), name


def _base_args(tmp_path):
  return dict(model_dir=str(tmp_path), iterations_per_loop=1,
              train_batch_size=BATCH, eval_batch_size=BATCH,
              save_checkpoints_steps=1)


@pytest.mark.parametrize('kind', RUNNERS)
def test_value_ops_run_once_after_the_last_update(tmp_path, kind):
  params = testutil.base_config(runner=kind, **_base_args(tmp_path / kind))
  runner = runners.make_runner(params, model_fn, input_fn)
  runner.train(1)
  for _ in range(2):  # Each evaluate() starts from fresh accumulators.
    del EVALUATORS[:]
    _assert_metrics(runner.evaluate(None))
    ran = [e for e in EVALUATORS if e.updates]
    assert len(ran) == 1  # One graph: the update and value ops share it.
    assert ran[0].updates == 3 and len(ran[0].predictions) == NUM_EXAMPLES
    assert sum(e.evaluations for e in EVALUATORS) == 1


def _printed_metrics(stdout):
  return {key: float(value) for key, value in
          re.findall(r'^(\w+): ([-\d.e]+)$', stdout, re.M)}


def test_two_replicas_evaluate_as_one_device(tmp_path):
  """The whole batch on the first replica: tf.compat.v1.metrics, Keras and
  py_func metrics and the loss as on one device, partial batch included."""
  args = _base_args(tmp_path)
  result = testutil.run_main(
      ['--runner=tf2', '--num_cpu_devices=2',
       f'--model={__name__}:model_fn', f'--input={__name__}:input_fn',
       '--mode=train_and_evaluate', '--train_steps=1', '--steps_per_eval=1',
       '--eval_steps=0'] + [f'--{k}={v}' for k, v in args.items()])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'mirrored strategy, 2 replica(s)' in result.stderr
  _assert_metrics(_printed_metrics(result.stdout))
