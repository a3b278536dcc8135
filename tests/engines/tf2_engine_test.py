"""The tf2 runner: unmodified model_fns under tf.distribute (every lane)."""

import glob
import math
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from input_fn import inputs
from model_fn import summaries
from tests import testutil
from trainer.engines.tf2 import engine as tf2_engine
from trainer.runtime import modes
from trainer.models import builtin

MLP_NAMES = {'global_step', 'beta1_power', 'beta2_power'} | {
    f'mlp/{layer}/{var}{slot}' for layer in ('dense1', 'logits')
    for var in ('kernel', 'bias') for slot in ('', '/Adam', '/Adam_1')}


def _runner(tmp_path, **overrides):
  params = testutil.base_config(model_dir=str(tmp_path / 'model'),
                                runner='tf2', **overrides)
  return tf2_engine.Tf2Engine(params, builtin.model_fn(params.model),
                              inputs.INPUT_FNS[params.input])


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """The MLP trained 10 steps from scratch once (checkpoints at the start
  and the end of train() only): (its model_dir, its variables after
  training), for the tests that start from a trained checkpoint."""
  path = tmp_path_factory.mktemp('trained')
  runner = _runner(path, iterations_per_loop=5, save_checkpoints_steps=100)
  runner.train(10)
  return str(path / 'model'), runner.variables()


def _copy_of(trained, tmp_path):
  """tmp_path/model: a copy of the trained model_dir, for a test to write."""
  shutil.copytree(trained[0], str(tmp_path / 'model'))
  return str(tmp_path / 'model')


def _event_tags(model_dir):
  files = glob.glob(os.path.join(model_dir, 'events.out.tfevents.*'))
  tags = {}
  for path in files:
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        tags.setdefault(value.tag, []).append(event.step)
  return files, tags


def test_trains_evaluates_predicts_with_tf1_names(tmp_path):
  runner = _runner(tmp_path, iterations_per_loop=5, save_checkpoints_steps=10,
                   log_step_count_steps=5, save_summary_steps=5)
  first = runner.train_steps(5)
  runner.train(20)
  assert runner.global_step() == 20
  assert first.shape == (5,) and np.all(np.isfinite(first))

  assert set(runner.module.variables_by_name()) == MLP_NAMES
  checkpoint = tf.train.latest_checkpoint(str(tmp_path / 'model'))
  assert checkpoint.endswith('model.ckpt-20')
  names = {n for n, _ in tf.train.list_variables(checkpoint)}
  assert names == MLP_NAMES

  metrics = runner.evaluate(steps=3)
  assert set(metrics) == {'loss', 'top_1_accuracy', 'top_5_accuracy',
                          'global_step'}
  assert metrics['global_step'] == 20
  assert metrics['top_1_accuracy'] > 0.3  # Well above chance (0.1), as
  assert metrics['loss'] < math.log(10)   # under Estimator (model_fn_test).

  predictions = list(runner.predict())
  assert len(predictions) == 360  # Every validation example, last batch too.
  assert set(predictions[0]) == {'classes', 'probabilities'}
  assert abs(float(np.sum(predictions[0]['probabilities'])) - 1.0) < 1e-5

  files, tags = _event_tags(str(tmp_path / 'model'))
  # One events file per writer and run (host_call's, Estimator's summary
  # hooks'), not per step.
  assert len(files) == 2, files
  # host_call sees each step's global_step before its update, as under
  # TPUEstimator: 0..19 for 20 steps.
  assert tags[summaries.LOSS_TAG] == list(range(20))
  assert summaries.LEARNING_RATE_TAG in tags
  assert tags['loss'] == [1, 6, 11, 16]  # Estimator's own summary hooks.
  assert tags['global_step/sec']


def test_resumes_from_its_own_checkpoint(trained, tmp_path):
  _copy_of(trained, tmp_path)
  expected = trained[1]
  resumed = _runner(tmp_path, iterations_per_loop=5)
  assert resumed.global_step() == 10  # Nothing built yet: reads checkpoint.
  resumed.train_steps(0)
  got = resumed.variables()
  assert got.keys() == expected.keys()
  for name in expected:
    np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def test_init_checkpoint_warm_starts_through_scaffold_fn(trained, tmp_path):
  kernel = trained[1]['mlp/dense1/kernel']
  warm = _runner(tmp_path / 'b', init_checkpoint=trained[0],
                 optimizer='sgd', learning_rate=0.0)
  warm.train_steps(1)
  np.testing.assert_array_equal(warm.variables()['mlp/dense1/kernel'], kernel)


def test_export_serves_encoded_images(trained, tmp_path):
  _copy_of(trained, tmp_path)
  runner = _runner(tmp_path)
  path = runner.export(str(tmp_path / 'export'))
  loaded = tf.saved_model.load(path)
  serve = loaded.signatures['serving_default']
  record = next(iter(tf.data.TFRecordDataset(
      sorted(glob.glob(os.path.join(testutil.DIGITS_JPEG, 'validation-*'))))))
  encoded = tf.io.parse_single_example(
      record, {'image/encoded': tf.io.FixedLenFeature([], tf.string)})
  outputs = serve(image_bytes=tf.stack([encoded['image/encoded']] * 2))
  assert outputs['probabilities'].shape == (2, 10)
  assert outputs['classes'].dtype == tf.int32


def test_controller_train_and_evaluate(tmp_path):
  runner = _runner(tmp_path, mode='train_and_evaluate', train_steps=10,
                   steps_per_eval=5, iterations_per_loop=5, eval_steps=2)
  result = modes.run(runner, runner.settings)
  assert result['global_step'] == 10
  assert result['top_1_accuracy'] > 0.2  # Chance: 0.1 (10 steps: 0.3).
  assert result['loss'] < math.log(10)  # Below the loss of a uniform guess.
  empty = _runner(tmp_path / 'empty', mode='predict')
  with pytest.raises(ValueError, match='no checkpoint to predict'):
    modes.run(empty, empty.settings)


@pytest.mark.parametrize('num_cpu_devices', [1, 2])
def test_legacy_user_model_fn_via_main(tmp_path, num_cpu_devices):
  """Written against tf.estimator names; runs unmodified on every TF."""
  testutil.write_legacy_user_module(tmp_path / 'legacy_model.py')
  result = testutil.run_main(
      ['--runner=tf2', f'--num_cpu_devices={num_cpu_devices}',
       '--model=legacy_model:model_fn', '--train_steps=20',
       '--steps_per_eval=20', '--eval_steps=2', '--iterations_per_loop=10',
       '--train_batch_size=32', '--eval_batch_size=40', '--num_cores=1',
       f'--model_dir={tmp_path / "model"}'],
      env={'PYTHONPATH': str(tmp_path)})
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r'^accuracy: [\d.]+$', result.stdout, re.M), result.stdout
  assert re.search(r'^global_step: 20$', result.stdout, re.M)
  assert 'Runner: tf2' in result.stderr
  strategy = 'mirrored' if num_cpu_devices > 1 else 'default'
  assert f'{strategy} strategy, {num_cpu_devices} replica(s)' in result.stderr
  names = {n for n, _ in tf.train.list_variables(str(tmp_path / 'model'))}
  assert {'linear/w', 'linear/w/Momentum', 'global_step'} <= names


def test_resnet_bfloat16_batch_norm_on_two_replicas(tmp_path):
  """UPDATE_OPS of batch norm run under MirroredStrategy; masters in f32."""
  model_dir = tmp_path / 'model'
  result = testutil.run_main(
      ['--runner=tf2', '--num_cpu_devices=2', '--model=resnet',
       '--resnet_depth=18', '--resnet_stem=small', '--precision=bfloat16',
       '--mode=train', '--train_steps=2', '--iterations_per_loop=2',
       '--train_batch_size=8', '--image_size=8', '--num_cores=1',
       f'--model_dir={model_dir}'])
  assert result.returncode == 0, result.stderr[-3000:]
  reader = tf.train.load_checkpoint(str(model_dir))
  dtypes = reader.get_variable_to_dtype_map()
  mean = 'resnet18/stem/batch_norm/moving_mean'
  assert dtypes[mean] == tf.float32
  assert dtypes['resnet18/stem/conv/kernel'] == tf.float32
  assert np.any(reader.get_tensor(mean) != 0.0)  # Updated from zeros.
  assert reader.get_tensor('global_step') == 2


def test_unreachable_tpu_fails_fast_naming_the_flag(tmp_path):
  with testutil.closed_port() as port:
    result = testutil.run_main(
        ['--runner=tf2', f'--tpu=grpc://127.0.0.1:{port}', '--mode=train',
         '--train_steps=1', f'--model_dir={tmp_path / "model"}'])
  assert result.returncode != 0
  assert f'--tpu=grpc://127.0.0.1:{port}' in result.stderr
  assert 'not reachable' in result.stderr


def test_train_after_evaluate_restores_optimizer_state(trained, tmp_path):
  _copy_of(trained, tmp_path)
  want = trained[1]  # As a runner restores them (test_resumes_...).
  runner = _runner(tmp_path)
  runner.evaluate(steps=1)  # Builds model variables only.
  runner.train_steps(0)  # Builds slots and beta powers: from the checkpoint.
  got = runner.variables()
  assert got.keys() == want.keys() and 'mlp/logits/kernel/Adam' in got
  for name in want:
    np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_xla_compiled_step_writes_the_loss_from_the_host(tmp_path):
  runner = _runner(tmp_path, iterations_per_loop=5, save_checkpoints_steps=10,
                   save_summary_steps=5, jit_compile='on')
  assert runner.jit
  runner.train(10)
  _, tags = _event_tags(str(tmp_path / 'model'))
  assert tags['loss'] == [1, 6]  # SummarySaverHook's steps, from the host.
  assert tags[summaries.LOSS_TAG] == list(range(10))


def test_summary_ops_in_a_compiled_step_are_refused(tmp_path):
  def model_fn(features, labels, mode, params):
    spec = builtin.model_fn('mlp')(features, labels, mode, params)
    tf.compat.v1.summary.scalar('my_loss', spec.loss)
    return spec

  params = testutil.base_config(model_dir=str(tmp_path / 'model'),
                                runner='tf2', jit_compile='on')
  runner = tf2_engine.Tf2Engine(params, model_fn, inputs.INPUT_FNS['tfrecord'])
  with pytest.raises(ValueError, match='write summaries with host_call'):
    runner.train(5)


def test_first_checkpoint_when_training_starts(trained):
  # 10 steps, save_checkpoints_steps=100: as Estimator, model.ckpt-0, then
  # the end of train().
  state = tf.train.get_checkpoint_state(trained[0])
  assert [p.rsplit('-', 1)[1] for p in state.all_model_checkpoint_paths] == [
      '0', '10']


def test_loops_of_a_seconds_budget(tmp_path):
  """--iterations_per_loop_secs (TPUEstimator's iterations_per_loop='1s'):
  one step first, then loops sized from its time, to the last step."""
  runner = _runner(tmp_path, iterations_per_loop=5,
                   iterations_per_loop_secs=1, save_checkpoints_steps=100)
  loops = []
  training = runner._training  # pylint: disable=protected-access
  run_loop = training._run_loop  # pylint: disable=protected-access
  training._run_loop = lambda n: loops.append(n) or run_loop(n)  # pylint: disable=protected-access
  runner.train(60)
  assert loops[0] == 1, loops
  assert max(loops) > 5, loops  # Not --iterations_per_loop's 5.
  assert sum(loops) == 60, loops
  assert testutil.latest_step(str(tmp_path / 'model')) == 60
