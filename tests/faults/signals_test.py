"""SIGINT (Ctrl-C) as SIGTERM: checkpoint, then exit 130; a second Ctrl-C
ends the process at once; guards nest without losing a request."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests import testutil
from trainer.guard import preemption


def test_sigint_sets_the_flag_and_exits_130():
  with preemption.handling_signals():
    signal.raise_signal(signal.SIGINT)  # No KeyboardInterrupt.
    assert preemption.requested()
    assert preemption.exit_status() == 130
    with pytest.raises(preemption.PreemptedError,
                       match=r'Interrupted \(SIGINT\): stopped at step 7') as e:
      preemption.raise_if_requested(7, '/model')
    assert e.value.exit_status == 130
  assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


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


_TWICE = textwrap.dedent('''
    import os, signal, sys, time
    sys.path.insert(0, sys.argv[1])
    from trainer.guard import preemption
    with preemption.handling_signals():
      os.kill(os.getpid(), signal.SIGINT)
      time.sleep(0.1)
      print('first handled', preemption.requested(), flush=True)
      os.kill(os.getpid(), signal.SIGINT)
      time.sleep(5)
      print('still running', flush=True)
    ''')


def test_a_second_sigint_ends_the_process_at_once():
  result = subprocess.run(
      [sys.executable, '-c', _TWICE, testutil.REPO_ROOT],
      capture_output=True, text=True, timeout=testutil.HANG_TIMEOUT)
  assert 'first handled True' in result.stdout
  assert 'still running' not in result.stdout
  assert result.returncode == -signal.SIGINT, result.stderr[-2000:]
