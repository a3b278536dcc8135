"""Model_fns written the way Cloud-TPU-era codebases write them (tests/legacy/)
train, evaluate, predict and export under both runners, and match the
estimator's results where it exists: evaluating one checkpoint gives the
same metrics under both runners (EMA shadow weights included)."""

import glob
import os
import random
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from tests.legacy import bert_classifier
from tests.legacy import digits_cnn
from tests.legacy import ema_model
from tests.legacy import keras_estimator
from trainer.runners import registry as runners

RUNNERS = [pytest.param('estimator', marks=testutil.requires_estimator), 'tf2']


def by_mode(train, evaluate, infer):
  """One trainer input_fn dispatching on params['mode']."""
  functions = {'train': train, 'eval': evaluate, 'infer': infer}

  def input_fn(params):
    return functions[params['mode']](params)

  return input_fn


def digits_input_fn(params):
  """The digits as {'image': [B, 784]}, labels (for the dict fixtures)."""
  dataset = digits_cnn.train_input_fn if params['mode'] == 'train' else (
      digits_cnn.eval_input_fn)
  return dataset(params).map(lambda image, label: ({'image': image}, label))


def _params(tmp_path, **overrides):
  settings = dict(model_dir=str(tmp_path / 'model'), iterations_per_loop=10,
                  train_steps=30, save_checkpoints_steps=30,
                  train_batch_size=32, eval_batch_size=40, learning_rate=0.05)
  settings.update(overrides)
  return testutil.base_config(**settings)


def _runner(kind, params, model_fn, input_fn):
  return runners.make_runner(params.replace(runner=kind), model_fn, input_fn)


def _example(index):
  record = list(tf.data.TFRecordDataset(sorted(glob.glob(os.path.join(
      testutil.DIGITS_RAW, 'validation-*')))).take(index + 1))[index]
  return record.numpy()


@pytest.mark.parametrize('kind', RUNNERS)
def test_tf1_layers_cnn_trains_evaluates_predicts_exports(tmp_path, kind):
  params = _params(tmp_path)
  input_fn = by_mode(digits_cnn.train_input_fn, digits_cnn.eval_input_fn,
                     digits_cnn.predict_input_fn)
  runner = _runner(kind, params, digits_cnn.model_fn, input_fn)
  runner.train(30)
  assert runner.global_step() == 30
  metrics = runner.evaluate(5)
  assert metrics['global_step'] == 30
  # Chance is 0.1; batch-norm statistics are still warming up at step 30.
  assert metrics['accuracy'] > 0.3, metrics
  predictions = list(runner.predict())
  assert len(predictions) == 10
  assert {'class_ids', 'probabilities'} <= set(predictions[0])
  np.testing.assert_allclose(
      [p['probabilities'].sum() for p in predictions], 1.0, rtol=1e-5)

  if kind != 'tf2':  # The estimator runner exports the built-in signature.
    return
  path = runner.export(
      str(tmp_path / 'export'),
      serving_input_receiver_fn=digits_cnn.serving_input_receiver_fn)
  loaded = tf.saved_model.load(path)
  assert {'classify', 'serving_default'} <= set(loaded.signatures)
  records = tf.constant([_example(i) for i in range(3)])
  served = loaded.signatures['classify'](examples=records)
  np.testing.assert_allclose(
      served['probabilities'].numpy(),
      [p['probabilities'] for p in predictions[:3]], rtol=1e-4, atol=1e-6)


def _estimator_checkpoint(tmp_path, model_fn, input_fn, steps=20):
  """model_dir trained `steps` steps by the reference runner of this lane."""
  kind = 'estimator' if testutil.HAS_ESTIMATOR else 'tf2'
  params = _params(tmp_path, train_steps=steps, save_checkpoints_steps=steps)
  _runner(kind, params, model_fn, input_fn).train(steps)
  return params


def test_ema_evaluation_uses_the_shadow_weights(tmp_path):
  params = _estimator_checkpoint(tmp_path, ema_model.model_fn,
                                 digits_input_fn)
  tf2 = _runner('tf2', params, ema_model.model_fn, digits_input_fn)
  metrics = tf2.evaluate(3)
  checkpoint = tf.train.load_checkpoint(tf2.latest_checkpoint())
  values = tf2.variables()
  for name in ('mlp/hidden/kernel', 'mlp/logits/bias',
               'mlp/batch_normalization/moving_mean'):
    shadow = checkpoint.get_tensor(name + '/ExponentialMovingAverage')
    np.testing.assert_array_equal(values[name], shadow, err_msg=name)
    assert not np.array_equal(shadow, checkpoint.get_tensor(name)), name
  if testutil.HAS_ESTIMATOR:
    reference = _runner('estimator', params, ema_model.model_fn,
                        digits_input_fn).evaluate(3)
    assert reference.keys() == metrics.keys()
    for key in reference:
      np.testing.assert_allclose(metrics[key], reference[key], rtol=1e-5,
                                 err_msg=key)


def test_estimator_spec_metric_ops_and_hooks(tmp_path):
  params = _estimator_checkpoint(tmp_path, keras_estimator.model_fn,
                                 digits_input_fn)
  tf2 = _runner('tf2', params, keras_estimator.model_fn, digits_input_fn)
  metrics = tf2.evaluate(3)
  assert set(metrics) == {'loss', 'accuracy', 'mean_probability',
                          'global_step'}
  assert 0.1 < metrics['mean_probability'] <= 1.0
  again = tf2.evaluate(3)  # Accumulators start from zero again.
  for key in metrics:
    np.testing.assert_allclose(again[key], metrics[key], rtol=1e-6)
  if testutil.HAS_ESTIMATOR:
    reference = _runner('estimator', params, keras_estimator.model_fn,
                        digits_input_fn).evaluate(3)
    for key in reference:
      np.testing.assert_allclose(metrics[key], reference[key], rtol=1e-5,
                                 err_msg=key)
  events = glob.glob(os.path.join(params.model_dir, 'eval',
                                  'events.out.tfevents.*'))
  assert events  # Written to model_dir/eval as Estimator does.


def test_keras_layers_start_from_the_seed_under_tf2(tmp_path):
  """tf-keras draws the seeds of unseeded initializers from Python's random
  module: the tf2 runner seeds it with --seed, so a Keras-layer model_fn
  starts from the same weights whatever ran before it in the process."""
  starts = []
  for run in range(2):
    random.seed(run)  # Python's random as another program would leave it.
    params = _params(tmp_path / str(run), train_steps=1,
                     save_checkpoints_steps=1)
    runner = _runner('tf2', params, keras_estimator.model_fn, digits_input_fn)
    runner.train(1)
    starts.append(testutil.checkpoint_values(params.model_dir))
  assert starts[0].keys() == starts[1].keys()
  assert any(k.startswith('hidden/') for k in starts[0]), sorted(starts[0])
  for name in starts[0]:
    np.testing.assert_array_equal(starts[0][name], starts[1][name], name)


def _bert_runner(kind, model_dir):
  model_fn = bert_classifier.model_fn_builder(
      num_labels=2, init_checkpoint=None, learning_rate=5e-3,
      num_train_steps=20, num_warmup_steps=4, use_tpu=False)
  input_fn = bert_classifier.input_fn_builder(
      is_training=True, seq_length=16, drop_remainder=True)
  params = testutil.base_config(
      model_dir=str(model_dir), iterations_per_loop=2, train_steps=20,
      save_checkpoints_steps=2, keep_checkpoint_max=20, train_batch_size=32)
  return _runner(kind, params, model_fn, input_fn)


def test_bert_style_classifier_trains_under_tf2(tmp_path):
  runner = _bert_runner('tf2', tmp_path / 'tf2')
  runner.train(20)
  values = runner.variables()
  # Slots made by get_variable inside apply_gradients, named from param.name.
  assert 'bert/embeddings/word_embeddings/adam_m' in values
  first = tf.train.load_checkpoint(str(tmp_path / 'tf2' / 'model.ckpt-0'))
  assert not np.array_equal(first.get_tensor('output_weights'),
                            values['output_weights'])
  assert testutil.latest_step(str(tmp_path / 'tf2')) == 20


@testutil.requires_estimator
def test_bert_style_classifier_same_weights_under_both_runners(tmp_path):
  """From one initial checkpoint, with the input_fn's unseeded shuffle and
  the model_fn's dropout, both runners reach the same weights. Four steps:
  later this loss collapses to 1e-6 within 20 steps, where the CPU's
  multithreaded reductions (not the runners) make runs of one runner differ;
  another batch or dropout mask would move the weights by ~lr = 5e-3."""
  tf2 = _bert_runner('tf2', tmp_path / 'tf2')
  tf2.train(4)
  start = tmp_path / 'estimator'
  start.mkdir()
  for path in glob.glob(str(tmp_path / 'tf2' / 'model.ckpt-0.*')):
    shutil.copy(path, start)
  with open(start / 'checkpoint', 'w') as f:
    f.write('model_checkpoint_path: "model.ckpt-0"\n')
  _bert_runner('estimator', start).train(4)
  expected = tf.train.load_checkpoint(str(start / 'model.ckpt-4'))
  for name, value in tf2.variables().items():
    np.testing.assert_allclose(value, expected.get_tensor(name), rtol=1e-4,
                               atol=1e-5, err_msg=name)
