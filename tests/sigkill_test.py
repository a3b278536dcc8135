"""SIGKILL at 10 random points, restart each time: training still completes,
steps never go backwards, and every checkpoint left in model_dir loads."""

import glob
import os
import random
import re
import signal
import time

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil

KILLS = 10
# Far more than 10 short runs get through: each gets at most ~0.6 s of
# training (a few hundred steps at the fastest), so every kill lands while
# training is still under way.
TRAIN_STEPS = 6000


def _restored_step(log_path):
  match = re.search(r'Restoring parameters from .*model\.ckpt-(\d+)\n',
                    open(log_path).read())
  return int(match.group(1)) if match else 0


@pytest.mark.parametrize('runner', [
    pytest.param('estimator', marks=testutil.requires_estimator), 'tf2'])
def test_sigkill_at_random_points_and_restart(tmp_path, runner):
  model_dir = str(tmp_path / 'model')
  args = [f'--model_dir={model_dir}', '--mode=train', '--mlp_hidden_units=8',
          f'--runner={runner}',
          '--train_batch_size=32', '--iterations_per_loop=10',
          '--save_checkpoints_steps=20', '--keep_checkpoint_max=3',
          f'--train_steps={TRAIN_STEPS}']
  seed = int(time.time())
  rng = random.Random(seed)
  print(f'seed {seed}')
  latest = 0
  for kill in range(KILLS + 1):
    log = str(tmp_path / f'run{kill}.log')
    process = testutil.start_main(args, log)
    try:
      if kill < KILLS:
        testutil.wait_for_training(process, log)
        delay = rng.uniform(0.0, 0.6)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
      process.wait(timeout=300)
    finally:
      if process.poll() is None:
        process.kill()
    restored = _restored_step(log)
    assert restored >= latest, f'run {kill} restarted from step {restored}'
    if kill < KILLS:
      assert process.returncode == -signal.SIGKILL, open(log).read()[-3000:]
    else:
      assert process.returncode == 0, open(log).read()[-3000:]
      assert f'global_step: {TRAIN_STEPS}' in process.stdout.read()
    step = testutil.latest_step(model_dir)  # The state loads.
    recovered = re.findall(r'(Removing .*|Checkpoint state .*)',
                           open(log).read())
    assert step >= latest, f'latest checkpoint went from {latest} to {step}'
    end = f'killed after {delay:.2f} s' if kill < KILLS else 'finished'
    print(f'run {kill}: resumed at {restored}, {end}, latest checkpoint '
          f'{step}; recovery: {recovered or "none"}')
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
