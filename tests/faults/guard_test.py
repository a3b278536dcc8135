"""The launcher's guard around Estimator.train / evaluate
(guard/estimator_guard.py), in-process: only the task that writes
checkpoints takes the model_dir lock and recovers; evaluators, workers and
parameter servers are never blocked; an evaluation recovers a model_dir
nobody trains."""

import os
import subprocess
import sys
import textwrap
import types

import pytest
import tensorflow as tf

from tests import testutil
from tests.faults import faultutil
from trainer.guard import estimator_guard
from trainer.guard import lock
from trainer.guard import session_hooks

_HOLD = textwrap.dedent('''
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from trainer.guard import lock
    with lock.locked(sys.argv[2]):
      print('held', flush=True)
      time.sleep(600)
    ''')


class _Estimator:
  """What the guard reads of an Estimator."""

  def __init__(self, model_dir, is_chief):
    self.model_dir = model_dir
    self.config = types.SimpleNamespace(is_chief=is_chief,
                                        keep_checkpoint_max=5)


@pytest.fixture()
def broken_model_dir(tmp_path):
  """A model_dir whose newest checkpoint (30) has a .data cut short."""
  model_dir = str(tmp_path / 'model')
  os.makedirs(model_dir)
  faultutil.save_checkpoints(model_dir, [10, 20, 30])
  with open(os.path.join(model_dir, 'model.ckpt-30.data-00000-of-00001'),
            'r+b') as f:
    f.truncate(100)
  yield model_dir
  lock.release_all()


@pytest.fixture()
def held_elsewhere(broken_model_dir):
  process = subprocess.Popen([sys.executable, '-c', _HOLD, testutil.REPO_ROOT,
                              broken_model_dir], stdout=subprocess.PIPE,
                             text=True)
  assert process.stdout.readline().strip() == 'held'
  yield broken_model_dir
  process.kill()
  process.wait()


def test_the_chief_locks_recovers_and_adds_the_stop_hook(broken_model_dir):
  seen = []
  estimator_guard.train(_Estimator(broken_model_dir, True), seen.extend)
  assert lock.held_here(broken_model_dir)
  assert tf.train.latest_checkpoint(broken_model_dir).endswith('ckpt-20')
  assert [type(h) for h in seen] == [session_hooks.StopOnSignalHook,
                                     session_hooks.StepRecorderHook]


def test_other_tasks_never_lock_nor_recover(held_elsewhere):
  seen = []
  estimator_guard.train(_Estimator(held_elsewhere, False), seen.extend)
  assert seen  # Trained, not refused, while another process holds it.
  assert not lock.held_here(held_elsewhere)
  assert tf.train.latest_checkpoint(held_elsewhere).endswith('ckpt-30')


def test_a_second_chief_is_refused(held_elsewhere):
  with pytest.raises(lock.ModelDirLockedError, match='in use by another'):
    estimator_guard.train(_Estimator(held_elsewhere, True),
                          lambda hooks: pytest.fail('trained'))


def test_evaluation_recovers_only_a_model_dir_nobody_trains(
    held_elsewhere, tmp_path):
  seen = []
  estimator_guard.evaluate(_Estimator(held_elsewhere, True), seen.extend)
  assert tf.train.latest_checkpoint(held_elsewhere).endswith('ckpt-30')
  assert [type(h) for h in seen] == [session_hooks.AbortOnSignalHook]


def test_evaluation_recovers_and_lets_go(broken_model_dir):
  estimator_guard.evaluate(_Estimator(broken_model_dir, True), list)
  assert tf.train.latest_checkpoint(broken_model_dir).endswith('ckpt-20')
  assert not lock.held_here(broken_model_dir)
  with lock.locked(broken_model_dir, wait_secs=0):  # Released.
    pass
