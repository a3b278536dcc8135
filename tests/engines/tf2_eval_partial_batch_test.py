"""Evaluation over several replicas with a partial last batch equals the
one-device (Estimator's) result.

44 examples in batches of 8: on one device five full batches and one of 4;
over 2 replicas (4 each) the last step gives the first replica 4 examples
and the second none, where the runner's loss was NaN (TF 2.15) or TF 2.20's
grappler died with SIGFPE (the step retraced with a static empty batch:
BERT's attention mask `ones([batch, n, 1]) * mask`). The loss has a ratio
of sums over the batch (TAPAS' masked-LM loss), which averaging the
replicas' losses does not give; metric_fn (TPUEstimatorSpec eval_metrics) computes per-example means
on the host. Weights are fixed (learning rate 0): every value is computed
here in numpy.
"""

import re

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.runners import registry as runners

v1 = tf.compat.v1
RUNNERS = [pytest.param('estimator', marks=testutil.requires_estimator), 'tf2']
NUM_EXAMPLES, BATCH = 44, 8
WEIGHTS = np.array([[0.9, -0.4, 0.1], [-0.2, 0.6, 0.3], [0.5, 0.5, -0.8]],
                   np.float32)


def _data():
  rng = np.random.RandomState(1)
  x = rng.uniform(-1, 1, size=(NUM_EXAMPLES, 3)).astype(np.float32)
  weight = rng.randint(0, 3, size=NUM_EXAMPLES).astype(np.float32)
  return x, weight, np.argmax(x, axis=1).astype(np.int64)


def input_fn(params):
  x, weight, y = _data()
  dataset = tf.data.Dataset.from_tensor_slices(({'x': x, 'weight': weight},
                                                y))
  if params['mode'] == 'train':
    return dataset.repeat().batch(params['batch_size'], drop_remainder=True)
  return dataset.batch(params['batch_size'])  # The last batch is partial.


def model_fn(features, labels, mode, params):
  del params
  x = features['x']
  # BERT's attention mask: ones of the batch's static size when known, times
  # the input (on an empty batch TF 2.20's grappler divided by zero).
  batch = x.shape[0] if x.shape[0] is not None else tf.shape(x)[0]
  x = tf.reduce_max(tf.ones([batch, 2, 1]) * tf.expand_dims(x, 1), axis=1)
  w = v1.get_variable('w', initializer=WEIGHTS)
  logits = tf.matmul(x, w)
  per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits)
  weight = features['weight']
  # A ratio of sums over the batch (TAPAS' masked-LM loss), plus a mean over
  # it (NaN on an empty batch).
  loss = tf.reduce_sum(weight * per_example) / (
      tf.reduce_sum(weight) + 1e-5) + 0.5 * tf.reduce_mean(per_example)
  spec = tf.compat.v1.estimator.tpu.TPUEstimatorSpec
  if mode == tf.estimator.ModeKeys.TRAIN:
    train_op = v1.train.GradientDescentOptimizer(0.0).minimize(
        loss, global_step=v1.train.get_global_step())
    return spec(mode, loss=loss, train_op=train_op)

  def metric_fn(per_example, weight, labels, logits):
    return {'weighted_loss': v1.metrics.mean(per_example, weights=weight),
            'accuracy': v1.metrics.accuracy(labels, tf.argmax(logits, 1)),
            'mean_logit': v1.metrics.mean(tf.reduce_mean(logits, axis=1))}

  return spec(mode, loss=loss, eval_metrics=(
      metric_fn, [per_example, weight, labels, logits]))


def expected_metrics():
  """Estimator's on one device: the loss is the mean of the 6 batches'."""
  x, weight, y = _data()
  logits = x @ WEIGHTS
  shifted = logits - logits.max(axis=1, keepdims=True)
  log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
  per_example = -log_probs[np.arange(NUM_EXAMPLES), y]
  batch_losses = [
      (weight[i:i + BATCH] * per_example[i:i + BATCH]).sum() /
      (weight[i:i + BATCH].sum() + 1e-5) + 0.5 * per_example[i:i + BATCH].mean()
      for i in range(0, NUM_EXAMPLES, BATCH)]
  return {'loss': np.mean(batch_losses),
          'weighted_loss': (weight * per_example).sum() / weight.sum(),
          'accuracy': np.mean(np.argmax(logits, axis=1) == y),
          'mean_logit': logits.mean(), 'global_step': 1}


def _assert_metrics(got):
  expected = expected_metrics()
  assert set(got) == set(expected)
  for name, value in expected.items():
    assert got[name] == pytest.approx(value, rel=1e-5, abs=1e-6), name


ARGS = dict(iterations_per_loop=1, train_batch_size=BATCH,
            eval_batch_size=BATCH, save_checkpoints_steps=1)


@pytest.mark.parametrize('kind', RUNNERS)
def test_one_device_result(tmp_path, kind):
  params = testutil.base_config(runner=kind, model_dir=str(tmp_path), **ARGS)
  runner = runners.make_runner(params, model_fn, input_fn)
  runner.train(1)
  _assert_metrics(runner.evaluate(None))


def test_two_replicas_give_the_one_device_result(tmp_path):
  result = testutil.run_main(
      ['--runner=tf2', '--num_cpu_devices=2',
       f'--model={__name__}:model_fn', f'--input={__name__}:input_fn',
       '--mode=train_and_evaluate', '--train_steps=1', '--steps_per_eval=1',
       '--eval_steps=0', f'--model_dir={tmp_path}'] +
      [f'--{k}={v}' for k, v in ARGS.items()])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'mirrored strategy, 2 replica(s)' in result.stderr
  _assert_metrics({k: float(v) for k, v in re.findall(
      r'^(\w+): ([-\d.e]+|nan)$', result.stdout, re.M)})
