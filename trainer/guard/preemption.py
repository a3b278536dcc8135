"""SIGTERM (preemption) as a flag the runners poll between loops.

Inside `handling_sigterm()` the first SIGTERM only sets the flag: the runner
finishes its current loop, writes a checkpoint at that step and returns; the
controller then raises PreemptedError, which the entry point turns into exit
status 143 (128 + SIGTERM). A second SIGTERM kills the process as usual.

Several workers (MultiWorkerMirroredStrategy): TensorFlow's coordination service
installs a SIGTERM handler of its own (`preemption_notifier.cc: SIGTERM caught`)
when the strategy starts, which would swallow the signal; `reclaim()` puts this
module's handler back (the loop driver calls it after the strategy exists and
before each loop). The workers then agree after each loop whether any of them
was preempted (the runner's collective, see trainer/runtime/driver.py), so all
stop at the same step, each with its checkpoint, and all exit 143:
`request(peer=True)` marks a stop asked by a peer.
"""

import contextlib
import signal
import threading

from absl import logging

from trainer.api import errors

EXIT_STATUS = 128 + signal.SIGTERM
_requested = threading.Event()
_by_peer = threading.Event()
_logged = threading.Event()
_handlers = []  # The handler of the innermost handling_sigterm() block.


class PreemptedError(errors.TrainerError):
  """Training stopped on SIGTERM after checkpointing."""


def requested():
  """True once SIGTERM was received inside handling_sigterm() (here or, in
  a multi-worker job, by a peer). The first True is logged here, in the
  caller's thread: the signal handler itself does no I/O."""
  if _requested.is_set() and not _logged.is_set():
    _logged.set()
    logging.warning(
        'SIGTERM%s: finishing this loop, writing a checkpoint and stopping.',
        ' received by another worker' if _by_peer.is_set() else '')
  return _requested.is_set()


def request(peer=False):
  """Asks the running trainer to checkpoint and stop, as SIGTERM does;
  `peer`: another worker of the job received it."""
  if peer and not _requested.is_set():
    _by_peer.set()
  _requested.set()


def reclaim():
  """Re-installs this module's SIGTERM handler inside handling_sigterm()
  (TensorFlow may have replaced it at the C level); a no-op outside, or
  off the main thread."""
  if not _handlers or threading.current_thread() is not (
      threading.main_thread()):
    return
  if not _requested.is_set():  # After the first, SIGTERM acts as before.
    signal.signal(signal.SIGTERM, _handlers[-1])


def _clear():
  for event in (_requested, _by_peer, _logged):
    event.clear()


@contextlib.contextmanager
def handling_sigterm():
  """Inside the block, SIGTERM sets the flag instead of killing."""
  previous = signal.getsignal(signal.SIGTERM) or signal.SIG_DFL

  def handler(signum, frame):
    # No I/O here: the signal may arrive while the main thread writes a log
    # line, and a write from the handler would then raise inside it (and
    # logging would swallow that error, losing the request).
    del frame
    _requested.set()
    signal.signal(signum, previous)  # A second SIGTERM acts as before.

  _clear()
  _handlers.append(handler)
  signal.signal(signal.SIGTERM, handler)
  try:
    yield
  finally:
    _handlers.pop()
    signal.signal(signal.SIGTERM, previous)
    _clear()  # Later runs in this process are not preempted.


def raise_if_requested(step, model_dir):
  """PreemptedError at `step` if SIGTERM was received."""
  if requested():
    raise PreemptedError(
        f'Preempted (SIGTERM): stopped at step {step} with a checkpoint in '
        f'{model_dir}; run the same command again to continue.')
