"""The model_dir lock: a stale one is taken over with a warning; a
directory that cannot be written is one error naming it; a process forked
by the holder never keeps it; the launcher holds it for the process."""

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests import testutil
from tests.faults import faultutil
from trainer.guard import lock as model_dir_lock
from trainer.guard import storage

_HOLD_AND_DIE = textwrap.dedent('''
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from trainer.guard import lock
    lock.hold(sys.argv[2])
    print('held', flush=True)
    os.kill(os.getpid(), 9)
    ''')

_HOLD_FORK_EXIT = textwrap.dedent('''
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from trainer.guard import lock
    lock.hold(sys.argv[2])
    child = os.fork()
    if child == 0:  # A child (an input worker, say) outlives it.
      time.sleep(60)
      os._exit(0)
    print(child, flush=True)
    os._exit(0)
    ''')


def test_a_stale_lock_is_taken_over_with_one_warning(tmp_path, caplog):
  model_dir = str(tmp_path)
  holder = subprocess.run([sys.executable, '-c', _HOLD_AND_DIE,
                           testutil.REPO_ROOT, model_dir],
                          capture_output=True, text=True,
                          timeout=testutil.HANG_TIMEOUT)
  assert holder.stdout.strip() == 'held'
  with open(os.path.join(model_dir, model_dir_lock.LOCK_FILE)) as f:
    dead_pid = json.load(f)['pid']
  with caplog.at_level(logging.WARNING):
    with model_dir_lock.locked(model_dir):
      pass
  warnings = [r.getMessage() for r in caplog.records
              if r.levelno >= logging.WARNING]
  assert len(warnings) == 1, warnings
  assert f'pid {dead_pid}' in warnings[0]
  assert 'no longer running' in warnings[0]
  caplog.clear()
  with caplog.at_level(logging.WARNING):  # Released cleanly: no warning.
    with model_dir_lock.locked(model_dir):
      pass
  assert not caplog.records


def test_a_forked_child_does_not_keep_the_lock(tmp_path):
  model_dir = str(tmp_path)
  process = subprocess.Popen([sys.executable, '-c', _HOLD_FORK_EXIT,
                              testutil.REPO_ROOT, model_dir],
                             stdout=subprocess.PIPE, text=True)
  child = int(process.stdout.readline())
  process.wait(timeout=testutil.HANG_TIMEOUT)
  started = time.monotonic()
  try:
    os.kill(child, 0)  # The child still runs,
    with model_dir_lock.locked(model_dir):  # and the lock is free.
      pass
  finally:
    os.kill(child, signal.SIGKILL)
  assert time.monotonic() - started < model_dir_lock.WAIT_SECS


def test_a_holder_is_waited_for_a_moment(tmp_path):
  model_dir = str(tmp_path)
  code = textwrap.dedent('''
      import sys, time
      sys.path.insert(0, sys.argv[1])
      from trainer.guard import lock
      with lock.locked(sys.argv[2]):
        print('held', flush=True)
        time.sleep(1)
      ''')
  process = subprocess.Popen([sys.executable, '-c', code, testutil.REPO_ROOT,
                              model_dir], stdout=subprocess.PIPE, text=True)
  try:
    assert process.stdout.readline().strip() == 'held'
    with model_dir_lock.locked(model_dir):  # Not refused: it lets go in 1 s.
      pass
  finally:
    process.wait(timeout=testutil.HANG_TIMEOUT)


def test_a_read_only_model_dir_is_one_error_naming_it():
  with faultutil.read_only_dir() as model_dir:
    if model_dir is None:
      pytest.skip('no read-only directory can be made here (root without '
                  'mount)')
    with pytest.raises(storage.StorageError) as raised:
      with model_dir_lock.locked(model_dir):
        pass
  message = str(raised.value)
  assert f'cannot write to model_dir {model_dir}' in message
  assert ('Read-only file system' in message or
          'Permission denied' in message), message


def test_hold_keeps_the_lock_until_released(tmp_path):
  model_dir = str(tmp_path)
  try:
    model_dir_lock.hold(model_dir)
    model_dir_lock.hold(model_dir)  # Again: nothing changes.
    assert model_dir_lock.held_here(model_dir)
    with pytest.raises(model_dir_lock.ModelDirLockedError,
                       match=f'pid {os.getpid()} '):
      with model_dir_lock.locked(model_dir, wait_secs=0):
        pass
  finally:
    model_dir_lock.release_all()
  assert not model_dir_lock.held_here(model_dir)
  with model_dir_lock.locked(model_dir):
    pass
