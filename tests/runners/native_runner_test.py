"""The native runner: Orbit training of the native models (every lane)."""

import os

os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

# pylint: disable=g-import-not-at-top,wrong-import-position
import glob
import io
import math
import re
import shutil
import signal

import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from model_fn import summaries
from tests import native_tf1
from tests import testutil
from trainer import params as params_lib
from trainer.guard import checkpoint_fit
from trainer.guard import checkpoint_recovery
from trainer.guard import nonfinite
from trainer.guard import preemption
from trainer.runners.native import convert
from trainer.runners.native import runner as runner_lib
from trainer.runtime import checkpoints
from trainer.runtime import modes
from input_fn import serving as export


def _params(tmp_path, **overrides):
  defaults = {'model_dir': str(tmp_path / 'model'), 'iterations_per_loop': 5,
              'save_checkpoints_steps': 10, 'save_summary_steps': 5,
              'log_step_count_steps': 5}
  return testutil.base_config(**dict(defaults, **overrides))


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """The native MLP of _params trained 10 steps once: (its model_dir, its
  TF1-named variables), for the tests that start from its checkpoints
  (ckpt-0 and ckpt-10); each works on a copy (_copy_of)."""
  params = _params(tmp_path_factory.mktemp('trained'))
  runner = runner_lib.NativeRunner(params)
  runner.train(10)
  return params.model_dir, {
      n: v.numpy() for n, v in runner.model.tf1_variables().items()}


def _copy_of(trained, tmp_path):
  """tmp_path/model (_params' model_dir): a copy of the trained one."""
  shutil.copytree(trained[0], str(tmp_path / 'model'))


def _event_tags(model_dir):
  tags = {}
  for path in glob.glob(os.path.join(model_dir, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        tags.setdefault(value.tag, []).append(event.step)
  return tags


def test_trains_evaluates_predicts_exports(tmp_path):
  params = _params(tmp_path)
  losses = []
  runner = runner_lib.NativeRunner(
      params, on_loop_end=lambda step, l: losses.append((step, l)))
  assert runner.global_step() == 0
  runner.train(20)
  assert runner.global_step() == 20
  assert [s for s, _ in losses] == [5, 10, 15, 20]
  assert all(l.shape == (5,) and np.all(np.isfinite(l)) for _, l in losses)
  model_dir = params.model_dir
  # As Estimator: a first checkpoint of the initial state, then the cadence.
  assert sorted(os.path.basename(p) for p in glob.glob(
      os.path.join(model_dir, 'ckpt-*.index'))) == [
          'ckpt-0.index', 'ckpt-10.index', 'ckpt-20.index']
  assert testutil.latest_step(model_dir) == 20  # The guard's step reader.
  tags = _event_tags(model_dir)
  # The tags and steps the tf2 runner writes (tests/engines/tf2_engine_test.py):
  # host_call's at each step's global_step before its update, Estimator's
  # `loss` every save_summary_steps from the first step, global_step/sec.
  assert tags[summaries.LOSS_TAG] == list(range(20))
  assert tags[summaries.LEARNING_RATE_TAG] == list(range(20))
  assert tags['loss'] == [1, 6, 11, 16]
  assert tags['global_step/sec'] == [5, 10, 15, 20]

  metrics = runner.evaluate(steps=3)
  assert set(metrics) == {'loss', 'top_1_accuracy', 'top_5_accuracy',
                          'global_step'}
  assert metrics['global_step'] == 20 and metrics['loss'] > 0
  full = runner.evaluate(None)  # 360 examples // 40 = 9 batches.
  # After 20 Adam steps from --seed=0 (0.225 here): above chance (0.1), and
  # below the loss of a uniform guess.
  assert full['top_1_accuracy'] > 0.15 and full['loss'] < math.log(10), full
  eval_tags = _event_tags(os.path.join(model_dir, 'eval'))
  assert eval_tags['top_1_accuracy'] == [20, 20]
  assert eval_tags['checkpoint_path'] == [20, 20]

  predictions = list(runner.predict())
  assert len(predictions) == 360  # The last partial batch too.
  assert set(predictions[0]) == {'classes', 'probabilities'}
  assert abs(float(np.sum(predictions[0]['probabilities'])) - 1.0) < 1e-5

  path = runner.export(str(tmp_path / 'export'))
  serve = tf.saved_model.load(path).signatures['serving_default']
  buffer = io.BytesIO()
  Image.fromarray(np.zeros([28, 28], np.uint8)).save(buffer, format='PNG')
  outputs = serve(**{export.SERVING_INPUT_KEY: tf.constant(
      [buffer.getvalue()])})
  expected = runner.model(-tf.ones([1, 28, 28, 1]), training=False)
  np.testing.assert_allclose(outputs['probabilities'].numpy(),
                             tf.nn.softmax(expected).numpy(), rtol=1e-5,
                             atol=1e-6)


def test_resumes_from_its_own_checkpoint(trained, tmp_path):
  _copy_of(trained, tmp_path)
  expected = trained[1]
  resumed = runner_lib.NativeRunner(_params(tmp_path))
  assert resumed.global_step() == 10
  for name, variable in resumed.model.tf1_variables().items():
    np.testing.assert_array_equal(variable.numpy(), expected[name])
  resumed.train(15)
  assert resumed.global_step() == 15


def test_resumes_from_a_converted_tf1_checkpoint(tmp_path):
  params = _params(tmp_path, optimizer='momentum')
  batches = native_tf1.batches(params.as_params(), 3)
  run = native_tf1.TF1Run(params.as_params(), batches[0][0].shape)
  run.train(batches)
  run.save(str(tmp_path / 'tf1'))
  run.close()
  with pytest.raises(runner_lib.NativeCheckpointError,
                     match='python -m trainer.runners.native.convert'):
    runner_lib.NativeRunner(params.replace(model_dir=str(tmp_path / 'tf1')))
  convert.convert(str(tmp_path / 'tf1'), params.as_params(),
                  params.model_dir)
  runner = runner_lib.NativeRunner(params)
  assert runner.global_step() == 3
  runner.train(10)
  assert tf.train.latest_checkpoint(params.model_dir).endswith('ckpt-10')


def test_training_needs_no_evaluation_files(tmp_path):
  data_dir = tmp_path / 'data'
  data_dir.mkdir()
  for path in glob.glob(os.path.join(testutil.DIGITS_RAW, 'train-*')):
    shutil.copy(path, data_dir)
  runner = runner_lib.NativeRunner(_params(tmp_path, data_dir=str(data_dir)))
  runner.train(5)
  assert runner.global_step() == 5
  with pytest.raises(ValueError, match='no files match .*validation-'):
    runner.evaluate(1)


def test_a_model_dir_of_another_model_is_refused(trained, tmp_path):
  _copy_of(trained, tmp_path)
  # Every variable that differs is named before the restore (TF's own
  # object-based restore named the first only).
  with pytest.raises(checkpoint_fit.CheckpointMismatchError) as raised:
    runner_lib.NativeRunner(_params(tmp_path, mlp_hidden_units=[8]))
  message = str(raised.value)
  assert ('model/dense1/kernel: [784, 16] float32 in the checkpoint, '
          '[784, 8] float32 in the model') in message
  assert 'model/logits/kernel: [16, 10] float32' in message


def test_on_loop_end_stops_after_a_save_or_raises_before_one(tmp_path):
  runner = runner_lib.NativeRunner(_params(tmp_path),
                                   on_loop_end=lambda step, _: step >= 5)
  runner.train(20)
  assert runner.global_step() == 5
  assert _latest_step(tmp_path) == 5

  def fail(step, losses):
    raise FloatingPointError(f'step {step}: {losses[-1]}')

  runner = runner_lib.NativeRunner(_params(tmp_path), on_loop_end=fail)
  with pytest.raises(FloatingPointError, match='step 10'):
    runner.train(20)
  assert _latest_step(tmp_path) == 5  # Nothing saved for steps 6-10.


def test_a_nan_loss_stops_before_a_save_naming_the_step(tmp_path):
  runner = runner_lib.NativeRunner(_params(tmp_path, learning_rate=1e30,
                                           optimizer='sgd'))
  with pytest.raises(nonfinite.NonFiniteLossError, match='at step'):
    runner.train(20)
  path = tf.train.latest_checkpoint(str(tmp_path / 'model'))
  reader = tf.train.load_checkpoint(path)
  for name in reader.get_variable_to_shape_map():
    value = reader.get_tensor(name)
    if isinstance(value, np.ndarray) and value.dtype.kind == 'f':
      assert np.all(np.isfinite(value)), name


def _latest_step(tmp_path):
  return testutil.latest_step(str(tmp_path / 'model'))


def test_mirrored_strategy_and_resnet_bfloat16(tmp_path):
  strategy = tf.distribute.MirroredStrategy(['/cpu:0'])
  params = _params(tmp_path, model='resnet', image_size=8,
                   precision='bfloat16', optimizer='momentum',
                   train_batch_size=8, eval_batch_size=8, augmentation='none',
                   input='synthetic', eval_steps=2)
  runner = runner_lib.NativeRunner(params, strategy)
  assert not runner.jit_compile
  runner.train(5)
  metrics = runner.evaluate(2)
  assert np.isfinite(metrics['loss']) and metrics['global_step'] == 5


def test_argument_errors_are_precise(tmp_path):
  with pytest.raises(ValueError, match=r"params\['iterations_per_loop'\] "
                     r'\(0\) must be a positive integer'):
    runner_lib.NativeRunner(_params(tmp_path, iterations_per_loop=0))
  with pytest.raises(ValueError, match='--num_slices'):
    runner_lib.NativeRunner(_params(tmp_path, num_slices=2))
  with pytest.raises(ValueError, match='--iterations_per_loop_secs=30: the '
                     'native runner runs loops of --iterations_per_loop'):
    runner_lib.NativeRunner(_params(tmp_path, iterations_per_loop_secs=30))
  runner = runner_lib.NativeRunner(_params(tmp_path))
  with pytest.raises(ValueError, match='has no checkpoint to evaluate'):
    runner.evaluate(1)


def test_default_job_reaches_97_percent(tmp_path):
  """The default MLP job (trainer.main's defaults) on the embedded digits."""
  params = testutil.base_config(
      model_dir=str(tmp_path / 'model'), train_steps=3000,
      iterations_per_loop=100, save_checkpoints_steps=1000,
      train_batch_size=128, eval_batch_size=120, mlp_hidden_units=[128],
      learning_rate=1e-3, lr_schedule='cosine', augmentation='pad_crop',
      shuffle_buffer=10000, optimizer='adam')
  runner = runner_lib.NativeRunner(params)
  runner.train(3000)
  metrics = runner.evaluate(None)
  print(f'native default job: {metrics}')
  assert metrics['top_1_accuracy'] >= 0.97


def test_sigterm_checkpoints_the_loop_and_stops(tmp_path):
  """The loop policy's SIGTERM stop, as in the other runners."""

  def sigterm_at_5(step, unused_losses):
    if step == 5:
      os.kill(os.getpid(), signal.SIGTERM)

  params = _params(tmp_path)
  with preemption.handling_sigterm():
    runner = runner_lib.NativeRunner(params, on_loop_end=sigterm_at_5)
    with pytest.raises(preemption.PreemptedError, match='step 5'):
      modes.run(runner, params.replace(mode='train', train_steps=20))
  assert _latest_step(tmp_path) == 5  # Not a multiple of 10: the stop's.


def test_main_runner_native_and_its_refusals(tmp_path):
  model_dir = str(tmp_path / 'main')
  args = ['--runner=native', '--train_steps=20', '--steps_per_eval=10',
          '--eval_steps=2', '--iterations_per_loop=10',
          '--train_batch_size=32', '--eval_batch_size=40',
          '--mlp_hidden_units=16', '--num_cores=1', f'--model_dir={model_dir}']
  result = testutil.run_main(args)
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r'^global_step: 20$', result.stdout, re.M)
  assert len(re.findall(r'train \| step: (10|20) \| steps/sec: ',
                        result.stderr)) == 2  # The one progress line.
  assert 'output: {' not in result.stderr  # Not Orbit's own line too.
  assert len(re.findall(r'eval \| step: (10|20) \| ', result.stderr)) == 2
  assert testutil.latest_step(model_dir) == 20

  tf1_dir = str(tmp_path / 'tf1')
  params = _params(tmp_path, model_dir=tf1_dir)
  batches = native_tf1.batches(params.as_params(), 1)
  run = native_tf1.TF1Run(params.as_params(), batches[0][0].shape)
  run.train(batches)
  run.save(tf1_dir)
  run.close()
  result = testutil.run_main(args[:-1] + [f'--model_dir={tf1_dir}'])
  assert result.returncode == 1
  assert 'python -m trainer.runners.native.convert' in result.stderr
  assert 'Traceback' not in result.stderr

  # The flags the native runner refuses, as trainer.main validates them; one
  # of them through the command line: it exits non-zero saying so.
  for setting, message in (({'model': 'tests.legacy.digits_cnn:model_fn'},
                            'trains the built-in models'),
                           ({'init_checkpoint': '/nowhere'},
                            '--init_checkpoint'),
                           ({'num_slices': 2}, '--num_slices')):
    with pytest.raises(ValueError, match=message):
      params_lib.validate_params(testutil.base_params(runner='native',
                                                      **setting))
  result = testutil.run_main(args + ['--num_slices=2'])
  assert result.returncode != 0 and '--num_slices' in result.stderr, (
      result.stderr[-2000:])


def test_recovery_after_an_interrupted_save_of_a_native_checkpoint(
    trained, tmp_path):
  """The guard's recovery and step reader understand ckpt-STEP."""
  params = _params(tmp_path)
  _copy_of(trained, tmp_path)
  model_dir = params.model_dir
  with open(os.path.join(model_dir, 'ckpt-20.index'), 'wb') as f:
    f.write(b'\x00' * 7)  # A truncated index of an interrupted save.
  os.mkdir(os.path.join(model_dir, 'ckpt-20_temp'))
  recovered = checkpoint_recovery.recover(model_dir, 5)
  assert recovered == os.path.join(model_dir, 'ckpt-10')
  assert not os.path.exists(os.path.join(model_dir, 'ckpt-20.index'))
  assert not os.path.exists(os.path.join(model_dir, 'ckpt-20_temp'))
  assert testutil.latest_step(model_dir) == 10
  assert checkpoints.checkpoint_step(recovered) == 10
  assert runner_lib.NativeRunner(params).global_step() == 10
