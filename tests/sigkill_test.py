"""SIGKILL at 10 points placed by training step, restart each time: training
still completes, steps never go backwards, and every checkpoint left in
model_dir loads.

The first kill lands as the trainer starts, before its first checkpoint; the
others when the log's progress line reaches a random step. The seed is
printed; TEST_SEED=N repeats a run's kill steps.
"""

import glob
import os
import re
import signal

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil

KILLS = 10
SAVE_EVERY = 10
# Each killed run trains 1 to MAX_ADVANCE steps past where it restarted (plus
# what runs between the log line and the kill): across 0 to 3 checkpoint
# steps, and all kills together far from the end.
MAX_ADVANCE = 3 * SAVE_EVERY
TRAIN_STEPS = 500


def _restored_step(log_path):
  with open(log_path) as f:
    match = re.search(r'Restoring parameters from .*model\.ckpt-(\d+)\n',
                      f.read())
  return int(match.group(1)) if match else 0


@pytest.mark.parametrize('runner', [
    pytest.param('estimator', marks=testutil.requires_estimator),
    # The tf2 runner's saves do not depend on the TF version: the modern
    # lane kills it; the legacy lane spends its time on the estimator's.
    pytest.param('tf2', marks=pytest.mark.skipif(
        testutil.HAS_ESTIMATOR, reason='killed on the modern lane'))])
def test_sigkill_at_random_steps_and_restart(tmp_path, runner):
  model_dir = str(tmp_path / 'model')
  args = [f'--model_dir={model_dir}', '--mode=train', '--mlp_hidden_units=8',
          f'--runner={runner}', '--train_batch_size=32',
          '--iterations_per_loop=5', f'--save_checkpoints_steps={SAVE_EVERY}',
          '--keep_checkpoint_max=3', f'--train_steps={TRAIN_STEPS}']
  rng = np.random.RandomState(testutil.seed_from_env())
  latest = 0
  for kill in range(KILLS + 1):
    log = str(tmp_path / f'run{kill}.log')
    process = testutil.start_main(args, log)
    try:
      if kill == 0:  # Before any checkpoint exists.
        testutil.wait_for_log(process, log, r'Runner: ')
        where = 'killed at start'
      elif kill < KILLS:
        target = latest + int(rng.randint(1, MAX_ADVANCE + 1))
        seen = testutil.wait_for_step(process, log, target)
        where = f'killed at step >= {seen} (target {target})'
      if kill < KILLS:
        process.send_signal(signal.SIGKILL)
      process.wait(timeout=testutil.HANG_TIMEOUT)
    finally:
      if process.poll() is None:
        process.kill()
    with open(log) as f:
      tail = f.read()[-3000:]
    restored = _restored_step(log)
    assert restored >= latest, f'run {kill} restarted from step {restored}'
    if kill < KILLS:
      assert process.returncode == -signal.SIGKILL, tail
    else:
      assert process.returncode == 0, tail
      assert f'global_step: {TRAIN_STEPS}' in process.stdout.read()
      where = 'finished'
    step = testutil.latest_step(model_dir)  # The state loads.
    if step is None:  # Killed before the first checkpoint.
      assert kill == 0 or latest == 0, f'run {kill}: the checkpoints are gone'
      step = 0
    with open(log) as f:
      recovered = re.findall(r'(Removing .*|Checkpoint state .*)', f.read())
    assert step >= latest, f'latest checkpoint went from {latest} to {step}'
    print(f'run {kill}: resumed at {restored}, {where}, latest '
          f'checkpoint {step}; recovery: {recovered or "none"}')
    latest = step
  assert latest == TRAIN_STEPS
  state = tf.train.get_checkpoint_state(model_dir)
  assert len(state.all_model_checkpoint_paths) == 3  # --keep_checkpoint_max.
  # A kill between the state update and the deletion of the oldest leaves
  # that complete checkpoint outside the state: it must load too.
  indexes = glob.glob(os.path.join(model_dir, '*.index'))
  print(f'{len(indexes)} checkpoints left: {sorted(indexes)}')
  for index in indexes:
    reader = tf.train.load_checkpoint(index[:-len('.index')])
    for name in reader.get_variable_to_shape_map():
      assert np.all(np.isfinite(reader.get_tensor(name))), (index, name)
