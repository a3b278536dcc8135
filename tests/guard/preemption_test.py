"""SIGTERM: checkpoint at the current step, exit promptly, restart continues."""

import re
import signal
import time
import types

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.guard import preemption
from trainer.runtime import loop

def test_sigterm_sets_the_flag_instead_of_killing():
  with preemption.handling_sigterm():
    assert not preemption.requested()
    signal.raise_signal(signal.SIGTERM)  # Handled before this returns.
    assert preemption.requested()
    with pytest.raises(preemption.PreemptedError, match='step 12'):
      preemption.raise_if_requested(12, '/model')
  assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
  with preemption.handling_sigterm():
    assert not preemption.requested()  # Each run starts clear.


def test_sigterm_while_a_log_line_is_written_is_not_lost(monkeypatch):
  # A signal handler that writes to stderr while the main thread is writing
  # a log line raises (RuntimeError: reentrant call), which logging then
  # swallows: the handler must set the flag without any I/O.
  def reentrant(*args, **kwargs):
    raise RuntimeError('reentrant call inside <_io.BufferedWriter>')

  with preemption.handling_sigterm():
    with monkeypatch.context() as patched:
      for name in ('debug', 'info', 'warning', 'error', 'log'):
        patched.setattr(preemption.logging, name, reentrant)
      signal.raise_signal(signal.SIGTERM)  # Must not raise.
    assert preemption.requested()


def test_reclaim_takes_sigterm_back_inside_the_block_only():
  def other(signum, frame):
    del signum, frame
    raise AssertionError('the replaced handler ran')

  preemption.reclaim()  # Outside a block: nothing to take back.
  assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
  with preemption.handling_sigterm():
    signal.signal(signal.SIGTERM, other)  # As TensorFlow's C++ one does.
    preemption.reclaim()
    signal.raise_signal(signal.SIGTERM)
    assert preemption.requested()
  assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.parametrize('runner', [
    pytest.param('estimator', marks=testutil.requires_estimator), 'tf2'])
def test_sigterm_checkpoints_current_step_and_restart_continues(tmp_path,
                                                                runner):
  model_dir = str(tmp_path / 'model')
  common = [f'--model_dir={model_dir}', '--mode=train', '--mlp_hidden_units=8',
            f'--runner={runner}',
            '--train_batch_size=32', '--iterations_per_loop=10',
            '--save_checkpoints_steps=100000']
  log = str(tmp_path / 'first.log')
  process = testutil.start_main(common + ['--train_steps=100000'], log)
  try:
    seen = testutil.wait_for_training(process, log)
    process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    process.wait(timeout=testutil.HANG_TIMEOUT)
    seconds = time.monotonic() - sent
  finally:
    if process.poll() is None:
      process.kill()
  stderr = open(log).read()
  assert process.returncode == preemption.EXIT_STATUS, stderr[-3000:]
  stopped = int(re.search(r'Preempted \(SIGTERM\): stopped at step (\d+)',
                          stderr).group(1))
  print(f'SIGTERM after step >= {seen}: exit {process.returncode} in '
        f'{seconds:.2f} s, checkpoint at step {stopped}')
  assert seen <= stopped < 100000  # At the current step, not the end.
  assert testutil.latest_step(model_dir) == stopped  # Not a periodic save.

  resumed = testutil.run_main(common + [f'--train_steps={stopped + 20}'])
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert f'global_step: {stopped + 20}' in resumed.stdout
  assert f'Restoring parameters from {model_dir}/model.ckpt-{stopped}' in (
      resumed.stderr)


@testutil.requires_estimator
def test_estimator_hooks_stop_training_and_abort_evaluation():
  from trainer.guard import session_hooks  # pylint: disable=g-import-not-at-top
  from trainer.runners.estimator import loop_hooks as estimator_hooks  # pylint: disable=g-import-not-at-top
  policy = loop.LoopPolicy(save_every_steps=100, steps_per_loop=10,
                           global_batch=8, train_steps=100, model_dir='/m')
  hook = estimator_hooks.LoopPolicyHook(policy, to_step=100)
  with tf.Graph().as_default():
    tf.compat.v1.train.create_global_step()
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.LOSSES,
                                   tf.constant(1.0))
    hook.begin()

  class Context:
    stop_requested = False
    session = types.SimpleNamespace(run=lambda fetches: 7)  # global_step

    def request_stop(self):
      self.stop_requested = True

  loss = tf.compat.v1.train.SessionRunValues(results=np.float32(0.5),
                                             options=None, run_metadata=None)
  with preemption.handling_sigterm():
    policy.begin(0, 100)
    train_context, eval_context = Context(), Context()
    hook.after_run(train_context, loss)
    session_hooks.AbortOnSignalHook('/m').before_run(eval_context)
    assert not train_context.stop_requested and not policy.should_save(7)
    preemption.request()
    hook.after_run(train_context, loss)
    assert train_context.stop_requested
    assert policy.should_save(7)  # The saver hook saves the current step.
    with pytest.raises(preemption.PreemptedError):  # No partial metrics.
      session_hooks.AbortOnSignalHook('/m').before_run(
          eval_context)
