"""SIGTERM (preemption) as a flag the runners poll between loops.

Inside `handling_sigterm()` the first SIGTERM only sets the flag: the runner
finishes its current loop, writes a checkpoint at that step and returns; the
controller then raises PreemptedError, which the entry point turns into exit
status 143 (128 + SIGTERM). A second SIGTERM kills the process as usual.
"""

import contextlib
import signal
import threading

from absl import logging

from trainer.api import errors

EXIT_STATUS = 128 + signal.SIGTERM
_requested = threading.Event()


class PreemptedError(errors.TrainerError):
  """Training stopped on SIGTERM after checkpointing."""


def requested():
  """True once SIGTERM was received inside handling_sigterm()."""
  return _requested.is_set()


def request():
  """Asks the running trainer to checkpoint and stop, as SIGTERM does."""
  if not _requested.is_set():
    logging.warning('SIGTERM: finishing this loop, writing a checkpoint and '
                    'stopping.')
  _requested.set()


@contextlib.contextmanager
def handling_sigterm():
  """Inside the block, SIGTERM sets the flag instead of killing."""
  _requested.clear()
  previous = signal.getsignal(signal.SIGTERM) or signal.SIG_DFL

  def handler(signum, frame):
    del frame
    request()
    signal.signal(signum, previous)  # A second SIGTERM acts as before.

  signal.signal(signal.SIGTERM, handler)
  try:
    yield
  finally:
    signal.signal(signal.SIGTERM, previous)
    _requested.clear()  # Later runs in this process are not preempted.


def raise_if_requested(step, model_dir):
  """PreemptedError at `step` if SIGTERM was received."""
  if requested():
    raise PreemptedError(
        f'Preempted (SIGTERM): stopped at step {step} with a checkpoint in '
        f'{model_dir}; run the same command again to continue.')
