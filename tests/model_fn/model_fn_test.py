"""The built-in model_fns in every mode under the lane's default runner:
TPUEstimator(use_tpu=False) where Estimator exists, the tf2 runner elsewhere."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from input_fn import inputs
from model_fn import summaries
from tests import testutil
from trainer.runners import registry as runners
from trainer.runtime import modes
from trainer.models import builtin
from trainer.models import inputs as run_inputs


def _runner(tmp_path, name='run', model='mlp', **overrides):
  params = testutil.base_config(model=model, runner=testutil.DEFAULT_RUNNER,
                                model_dir=str(tmp_path / name), **overrides)
  return runners.make_runner(params, builtin.model_fn(model),
                             inputs.INPUT_FNS['tfrecord']), params


def _summary_tags(model_dir):
  tags = set()
  for path in glob.glob(os.path.join(model_dir, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(v.tag for v in event.summary.value)
  return tags


def test_mlp_train_evaluate_predict(tmp_path):
  runner, params = _runner(tmp_path)
  runner.train(20)
  assert runner.global_step() == 20

  metrics = runner.evaluate(steps=3)
  assert set(metrics) >= {'loss', 'top_1_accuracy', 'top_5_accuracy',
                          'global_step'}
  assert 0.0 <= metrics['top_1_accuracy'] <= metrics['top_5_accuracy'] <= 1.0
  assert metrics['top_1_accuracy'] > 0.3  # Well above chance (0.1).

  predictions = list(runner.predict())
  assert len(predictions) == 360  # Every eval example, none dropped.
  probs = np.stack([p['probabilities'] for p in predictions])
  np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
  classes = np.array([p['classes'] for p in predictions])
  np.testing.assert_array_equal(classes, probs.argmax(axis=1))

  tags = _summary_tags(params.model_dir)
  assert {summaries.LOSS_TAG, summaries.LEARNING_RATE_TAG} <= tags


def test_controller_train_and_evaluate_alternates(tmp_path):
  runner, params = _runner(tmp_path, mode='train_and_evaluate',
                           train_steps=20, steps_per_eval=10)
  evaluations = []
  original = runner.evaluate
  runner.evaluate = lambda steps: evaluations.append(steps) or original(steps)
  metrics = modes.run(runner, params,
                      eval_steps=lambda: run_inputs.eval_steps(params))
  assert evaluations == [9, 9]  # 360 eval examples // batch 40, twice.
  assert metrics['global_step'] == 20
  assert 'top_1_accuracy' in metrics


def test_resnet18_trains_and_updates_batch_norm(tmp_path):
  runner, params = _runner(tmp_path, model='resnet', train_batch_size=8,
                           eval_batch_size=8, learning_rate=0.001)
  runner.train(3)
  reader = tf.train.load_checkpoint(params.model_dir)
  moving_mean = reader.get_tensor(
      'resnet18/stem/batch_norm/moving_mean')
  assert np.any(moving_mean != 0.0)  # UPDATE_OPS ran with the train_op.
  assert reader.get_tensor('global_step') == 3
  metrics = runner.evaluate(steps=1)
  assert np.isfinite(metrics['loss'])


def test_bfloat16_checkpoint_has_float32_variables(tmp_path):
  runner, params = _runner(tmp_path, precision='bfloat16')
  runner.train(5)
  reader = tf.train.load_checkpoint(params.model_dir)
  dtypes = reader.get_variable_to_dtype_map()
  assert dtypes['mlp/dense1/kernel'] == tf.float32
  assert dtypes['mlp/logits/bias'] == tf.float32


def test_init_checkpoint_warm_starts(tmp_path):
  source, source_params = _runner(tmp_path, name='source')
  source.train(5)
  target, target_params = _runner(
      tmp_path, name='target', learning_rate=0.0,
      init_checkpoint=source_params.model_dir)
  target.train(1)
  source_kernel = tf.train.load_checkpoint(
      source_params.model_dir).get_tensor('mlp/dense1/kernel')
  target_kernel = tf.train.load_checkpoint(
      target_params.model_dir).get_tensor('mlp/dense1/kernel')
  np.testing.assert_array_equal(source_kernel, target_kernel)


def test_init_checkpoint_from_other_model_lists_mismatches(tmp_path):
  source, source_params = _runner(tmp_path, name='source')
  source.train(2)
  target, _ = _runner(tmp_path, name='target', mlp_hidden_units=[32],
                      init_checkpoint=source_params.model_dir)
  with pytest.raises(ValueError) as e:
    target.train(1)
  assert 'mlp/dense1/kernel' in str(e.value)
  assert '[784, 32]' in str(e.value) and '[784, 16]' in str(e.value)
