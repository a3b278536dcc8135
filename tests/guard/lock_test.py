"""One trainer per model_dir; a lock left by a killed process never blocks."""

import json
import os
import select
import signal
import subprocess
import sys

import pytest
import tensorflow as tf

from trainer.guard import lock as model_dir_lock
from tests import testutil

_HOLD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from trainer.guard import lock as model_dir_lock
with model_dir_lock.locked(sys.argv[2]):
  print('locked', flush=True)
  time.sleep(600)
"""


def _holder(model_dir):
  """A process holding the lock of model_dir; returns once it has it."""
  process = subprocess.Popen(
      [sys.executable, '-c', _HOLD, testutil.REPO_ROOT, model_dir],
      stdout=subprocess.PIPE, text=True)
  ready, _, _ = select.select([process.stdout], [], [], testutil.HANG_TIMEOUT)
  if not ready:
    process.kill()
    process.wait()
    raise AssertionError(f'the lock holder hangs: nothing on its stdout '
                         f'within {testutil.HANG_TIMEOUT} s')
  line = process.stdout.readline().strip()
  if line != 'locked':
    process.kill()
    process.wait()
    raise AssertionError(f'the lock holder printed {line!r}, exit '
                         f'{process.returncode}')
  return process


def test_second_holder_in_the_same_process_is_refused(tmp_path):
  model_dir = str(tmp_path / 'model')
  with model_dir_lock.locked(model_dir):
    with pytest.raises(model_dir_lock.ModelDirLockedError,
                       match=rf'in use by another trainer \(pid {os.getpid()}'):
      with model_dir_lock.locked(model_dir):
        pass
  with model_dir_lock.locked(model_dir):  # Released on exit.
    pass


def test_lock_of_a_sigkilled_process_does_not_block(tmp_path):
  model_dir = str(tmp_path)
  holder = _holder(model_dir)
  try:
    with pytest.raises(model_dir_lock.ModelDirLockedError,
                       match=rf'pid {holder.pid} '):
      with model_dir_lock.locked(model_dir):
        pass
  finally:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
  lock_file = os.path.join(model_dir, model_dir_lock.LOCK_FILE)
  with open(lock_file) as f:
    assert json.load(f)['pid'] == holder.pid  # The stale lock file is there,
  with model_dir_lock.locked(model_dir):      # and does not block.
    with open(lock_file) as f:
      assert json.load(f)['pid'] == os.getpid()


def test_second_trainer_refuses_and_touches_nothing(tmp_path):
  model_dir = str(tmp_path)
  holder = _holder(model_dir)
  try:
    result = testutil.run_main([f'--model_dir={model_dir}', '--mode=train',
                                '--train_steps=5'])
  finally:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
  assert result.returncode == 1
  assert f'is in use by another trainer (pid {holder.pid}' in result.stderr
  assert 'Traceback' not in result.stderr
  assert os.listdir(model_dir) == [model_dir_lock.LOCK_FILE]
  assert tf.train.latest_checkpoint(model_dir) is None
