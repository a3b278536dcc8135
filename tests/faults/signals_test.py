"""SIGINT (Ctrl-C) as SIGTERM: checkpoint, then exit 130; a second Ctrl-C
ends the process at once; guards nest without losing a request."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests import testutil
from tests.faults import faultutil
from trainer.guard import preemption


def test_sigint_sets_the_flag_and_exits_130():
  before = signal.getsignal(signal.SIGINT)  # (An xdist worker ignores it.)
  with preemption.handling_signals():
    signal.raise_signal(signal.SIGINT)  # No KeyboardInterrupt.
    assert preemption.requested()
    assert preemption.exit_status() == 130
    with pytest.raises(preemption.PreemptedError,
                       match=r'Interrupted \(SIGINT\): stopped at step 7') as e:
      preemption.raise_if_requested(7, '/model')
    assert e.value.exit_status == 130
    assert signal.getsignal(signal.SIGINT) is not before  # Replaced.
  assert signal.getsignal(signal.SIGINT) is before  # Put back.


def test_sigterm_exit_status_stays_143():
  with preemption.handling_signals():
    signal.raise_signal(signal.SIGTERM)
    assert preemption.exit_status() == preemption.EXIT_STATUS == 143
    with pytest.raises(preemption.PreemptedError,
                       match=r'Preempted \(SIGTERM\)') as e:
      preemption.raise_if_requested(3, '/model')
    assert e.value.exit_status == 143


def test_a_nested_block_keeps_the_outer_request():
  with preemption.handling_signals():
    with preemption.handling_signals():
      signal.raise_signal(signal.SIGTERM)
    assert preemption.requested()  # Not cleared by the inner block's end.
  assert not preemption.requested()


_BUSY = textwrap.dedent('''
    import sys
    sys.path.insert(0, sys.argv[1])
    import tensorflow as tf
    from trainer.guard import preemption

    @tf.function
    def busy(n):  # Seconds inside TensorFlow's C++, Python's handlers idle.
      return tf.while_loop(lambda i, x: i < n,
                           lambda i, x: (i + 1, tf.sin(x) + 1.0),
                           [tf.constant(0), tf.constant(0.0)])

    busy(tf.constant(10))
    with preemption.handling_signals():
      print('ready', flush=True)
      # Hours (200,000 iterations took 1.8 s, which a loaded test process
      # could sleep through): only the second signal ends it.
      busy(tf.constant(2**31 - 1))
      print('finished the step; requested', preemption.requested(),
            flush=True)
    ''')


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_ends_a_long_step_at_once(signum):
  process = subprocess.Popen(
      [sys.executable, '-c', _BUSY, testutil.REPO_ROOT],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  try:
    assert process.stdout.readline().strip() == 'ready'
    time.sleep(0.5)
    process.send_signal(signum)  # Seen while the step runs in C++,
    time.sleep(0.5)
    assert process.poll() is None  # which goes on,
    process.send_signal(signum)  # until the second.
    sent = time.monotonic()
    process.wait(timeout=testutil.HANG_TIMEOUT)
    seconds = time.monotonic() - sent
  finally:
    if process.poll() is None:
      process.kill()
  stdout, stderr = process.communicate()
  assert process.returncode == 128 + signum, stderr[-2000:]
  assert 'finished the step' not in stdout
  assert 'again: exiting at once' in stderr
  assert seconds < 1.0, seconds


_SAVING = textwrap.dedent('''
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    import tensorflow as tf
    from trainer.guard import preemption

    model_dir = sys.argv[2]
    # 256 MB: about a second to write here, so both signals come mid-save.
    checkpoint = tf.train.Checkpoint(weights=tf.Variable(
        tf.zeros([64, 1024, 1024])))
    with preemption.handling_signals(model_dir):
      print('saving', flush=True)
      checkpoint.write(os.path.join(model_dir, 'model.ckpt-7'))
      print('saved', flush=True)
      time.sleep(600)  # Only the second signal ends it.
    ''')


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_lets_a_save_under_way_complete(signum, tmp_path):
  """TF writes a checkpoint's .index in place: exiting mid-save would leave
  it missing or cut short. The exit waits for the save (not for a step)."""
  model_dir = str(tmp_path)
  process = subprocess.Popen(
      [sys.executable, '-c', _SAVING, testutil.REPO_ROOT, model_dir],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  try:
    assert process.stdout.readline().strip() == 'saving'
    deadline = time.monotonic() + testutil.HANG_TIMEOUT
    while not faultutil.leftovers(model_dir):  # Its _temp/: mid-save.
      assert time.monotonic() < deadline and process.poll() is None
      time.sleep(0.005)
    process.send_signal(signum)
    time.sleep(0.01)
    process.send_signal(signum)
    process.wait(timeout=testutil.HANG_TIMEOUT)
  finally:
    if process.poll() is None:
      process.kill()
  _, stderr = process.communicate()
  assert process.returncode == 128 + signum, stderr[-2000:]
  assert faultutil.assert_every_checkpoint_loads(model_dir) == 1, (
      f'no complete checkpoint: {os.listdir(model_dir)}')
  assert not faultutil.leftovers(model_dir)
  assert 'complete first' in stderr, stderr[-2000:]
  assert 'again: exiting at once' in stderr


_FORKED_CHILD = textwrap.dedent('''
    import os, signal, sys, time
    sys.path.insert(0, sys.argv[1])
    from trainer.guard import preemption
    with preemption.handling_signals():
      child = os.fork()
      if child == 0:  # An input worker: it gets the same Ctrl-C.
        time.sleep(3)
        os._exit(0)
      time.sleep(0.5)
      os.killpg(0, signal.SIGINT)  # One Ctrl-C to the process group.
      time.sleep(0.5)
      print('still running, requested', preemption.requested(), flush=True)
      os.waitpid(child, 0)
    ''')


def test_one_ctrl_c_to_a_group_with_a_forked_child_is_one_signal():
  result = subprocess.run(
      [sys.executable, '-c', _FORKED_CHILD, testutil.REPO_ROOT],
      capture_output=True, text=True, timeout=testutil.HANG_TIMEOUT,
      start_new_session=True)  # Its own process group.
  assert 'still running, requested True' in result.stdout, result.stderr
  assert result.returncode == 0, result.stderr
