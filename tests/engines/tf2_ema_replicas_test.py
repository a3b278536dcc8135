"""EMA evaluation through a Scaffold's Saver, on 1 and 2 replicas.

An EMA model_fn (efficientnet, ResNet-RS) applies ExponentialMovingAverage
in TRAIN and, in EVAL / PREDICT, returns a Scaffold whose
`Saver(ema.variables_to_restore())` puts the shadow values into the model's
variables. Under the real TPUEstimator (TF 2.15) and under the tf2 runner on
any number of replicas, evaluation and prediction of one checkpoint must
then run on its shadow values.
"""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.runners import registry as runners

v1 = tf.compat.v1
N, BATCH = 32, 8


def _examples():
  rng = np.random.RandomState(5)
  x = rng.uniform(-1, 1, size=(N, 4)).astype(np.float32)
  return x, (x[:, 0] - x[:, 1] > 0).astype(np.int64)


def input_fn(params):
  x, y = _examples()
  dataset = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
  if params['mode'] == 'train':
    dataset = dataset.repeat()
  return dataset.batch(params['batch_size'], drop_remainder=True)


def _model_fn(form):
  """form: 'scaffold_fn' (a TPUEstimatorSpec's, run after the model_fn) or
  'scaffold' (an EstimatorSpec's Scaffold, its Saver made in the model_fn)."""

  def model_fn(features, labels, mode, params):
    del params
    training = mode == tf.estimator.ModeKeys.TRAIN
    w = v1.get_variable('dense/w', initializer=np.linspace(
        -1, 1, 8, dtype=np.float32).reshape(4, 2))
    hidden = v1.layers.batch_normalization(features['x'] @ w,
                                           training=training, momentum=0.5)
    logits = hidden + v1.get_variable('dense/b', initializer=[0.1, -0.1])
    ema = v1.train.ExponentialMovingAverage(decay=0.5)
    ema_vars = v1.trainable_variables() + [
        v for v in v1.global_variables() if 'moving_' in v.op.name]
    predictions = {'logits': logits}
    loss = None
    if mode != tf.estimator.ModeKeys.PREDICT:
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=labels, logits=logits))
    train_op, scaffold_fn, scaffold, metrics = None, None, None, None
    if training:
      with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
        train_op = v1.train.GradientDescentOptimizer(0.5).minimize(
            loss, v1.train.get_global_step())
      with tf.control_dependencies([train_op]):
        train_op = ema.apply(ema_vars)
    else:
      restore = ema.variables_to_restore(ema_vars)
      if form == 'scaffold':
        scaffold = v1.train.Scaffold(saver=v1.train.Saver(restore))
      else:
        scaffold_fn = lambda: v1.train.Scaffold(saver=v1.train.Saver(restore))
    def metric_fn(labels, logits):
      return {'accuracy': v1.metrics.accuracy(labels, tf.argmax(logits, 1))}

    if form == 'scaffold':
      if mode == tf.estimator.ModeKeys.EVAL:
        metrics = metric_fn(labels, logits)
      return tf.estimator.EstimatorSpec(
          mode, predictions=predictions, loss=loss, train_op=train_op,
          eval_metric_ops=metrics, scaffold=scaffold)
    if mode == tf.estimator.ModeKeys.EVAL:
      metrics = (metric_fn, [labels, logits])
    return v1.estimator.tpu.TPUEstimatorSpec(
        mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metrics=metrics, scaffold_fn=scaffold_fn)

  return model_fn


def _runner(model_dir, form, runner='tf2', replicas=1):
  params = testutil.base_config(
      runner=runner, model_dir=str(model_dir), seed=3, num_cpu_devices=replicas,
      iterations_per_loop=2, train_batch_size=BATCH, eval_batch_size=BATCH,
      save_checkpoints_steps=100)
  return runners.make_runner(params, _model_fn(form), input_fn)


def _predict(runner):
  return np.stack([p['logits'] for p in runner.predict()])


def _logits_of(model_dir, suffix):
  """The model's logits in numpy from the checkpoint's variables (or their
  moving averages, suffix '/ExponentialMovingAverage')."""
  value = lambda name: tf.train.load_variable(str(model_dir), name + suffix)
  x, _ = _examples()
  hidden = x @ value('dense/w')
  variance = value('batch_normalization/moving_variance')
  hidden = (hidden - value('batch_normalization/moving_mean')) / np.sqrt(
      variance + 1e-3) * value('batch_normalization/gamma') + value(
          'batch_normalization/beta')
  return hidden + value('dense/b')


@pytest.fixture(name='trained', scope='module', params=['scaffold_fn',
                                                        'scaffold'])
def _trained(request, tmp_path_factory):
  """(form, model_dir trained 4 steps): by the real Estimator where there
  is one (the reference), else by the tf2 runner."""
  form = request.param
  model_dir = tmp_path_factory.mktemp(f'ema_{form}') / 'model'
  runner = 'estimator' if testutil.HAS_ESTIMATOR else 'tf2'
  _runner(model_dir, form, runner).train(4)
  return form, str(model_dir)


def _copy(model_dir, work, name):
  copy = os.path.join(work, name)
  shutil.copytree(model_dir, copy)
  return copy


def check_predict(form, model_dir, work, replicas):
  """Predictions of model_dir's checkpoint are those of its shadows."""
  logits = _predict(_runner(_copy(model_dir, work, 'm'), form,
                            replicas=replicas))
  shadow = _logits_of(model_dir, '/ExponentialMovingAverage')
  np.testing.assert_allclose(logits, shadow, rtol=1e-5, atol=1e-6)
  # The shadows differ from the weights: restoring those would fail here.
  assert np.abs(_logits_of(model_dir, '') - shadow).max() > 1e-2


def check_as_the_real_estimator(form, model_dir, work, replicas):
  """evaluate() and predict() of model_dir as under TPUEstimator."""
  reference = _runner(_copy(model_dir, work, 'ref'), form, 'estimator')
  tf2 = _runner(_copy(model_dir, work, 'tf2'), form, replicas=replicas)
  expected, result = reference.evaluate(None), tf2.evaluate(None)
  assert result['global_step'] == expected['global_step'] == 4
  assert result['loss'] == pytest.approx(expected['loss'], rel=1e-5)
  assert result['accuracy'] == pytest.approx(expected['accuracy'])
  np.testing.assert_allclose(_predict(tf2), _predict(reference), rtol=1e-5,
                             atol=1e-6)


def train_twice(model_dir, replicas, evaluate):
  """Trains 2 steps, then to step 4; if `evaluate`, evaluates and predicts
  in between, as train_and_evaluate does, checking it reads the shadows."""
  runner = _runner(model_dir, 'scaffold_fn', replicas=replicas)
  runner.train(2)
  if evaluate:
    runner.evaluate(None)
    np.testing.assert_allclose(
        _predict(runner), _logits_of(model_dir, '/ExponentialMovingAverage'),
        rtol=1e-5, atol=1e-6)
  runner.train(4)


@pytest.mark.parametrize('replicas', [1, 2])
def test_predict_runs_on_the_moving_averages(trained, tmp_path, replicas):
  form, model_dir = trained
  testutil.call_on_cpu_devices(replicas, check_predict, form, model_dir,
                               str(tmp_path), replicas)


@testutil.requires_estimator
@pytest.mark.parametrize('replicas', [1, 2])
def test_evaluate_and_predict_as_the_real_estimator(trained, tmp_path,
                                                    replicas):
  form, model_dir = trained
  testutil.call_on_cpu_devices(replicas, check_as_the_real_estimator, form,
                               model_dir, str(tmp_path), replicas)


@pytest.mark.parametrize('replicas', [1, 2])
def test_training_goes_on_from_its_weights_after_evaluating(tmp_path,
                                                            replicas):
  # One runner per process: two MirroredStrategy runners in one process
  # collide on collective instance keys.
  evaluated, straight = str(tmp_path / 'evaluated'), str(tmp_path / 'straight')
  testutil.call_on_cpu_devices(replicas, train_twice, evaluated, replicas,
                               True)
  testutil.call_on_cpu_devices(replicas, train_twice, straight, replicas,
                               False)
  assert testutil.latest_step(evaluated) == 4
  for name in ('dense/w', 'dense/w/ExponentialMovingAverage'):
    np.testing.assert_allclose(tf.train.load_variable(evaluated, name),
                               tf.train.load_variable(straight, name),
                               rtol=1e-6, atol=1e-7)
