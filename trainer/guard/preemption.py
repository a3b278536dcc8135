"""SIGTERM (preemption) and SIGINT (Ctrl-C) as a flag the runners poll.

Inside `handling_signals()` the first SIGTERM or SIGINT only sets the flag:
the runner finishes its current loop, writes a checkpoint at that step and
returns; trainer/runtime/modes.py then raises PreemptedError, which the entry point
turns into exit status 128 + the signal (143 for SIGTERM, 130 for SIGINT).
A second SIGTERM or SIGINT ends the process at once with the same status,
also while the first waits for a long step inside TensorFlow (see
_Watcher), without a checkpoint of the running step; only a checkpoint
already being written to the block's model_dir is let finish first
(TensorFlow writes its .index in place: an exit during the write would
leave it cut short), for at most SAVE_GRACE_SECONDS or until a third
signal.

Several workers (MultiWorkerMirroredStrategy): TensorFlow's coordination
service installs a SIGTERM handler of its own (`preemption_notifier.cc:
SIGTERM caught`) when the strategy starts, which would swallow the signal;
`reclaim()` puts this module's handlers back (the loop driver calls it after
the strategy exists and before each loop). The workers then agree after
each loop whether any of them was stopped (the runner's collective, see
trainer/runtime/driver.py), so all stop at the same step, each with its checkpoint:
`request(peer=True)` marks a stop asked by a peer.

Blocks nest: an inner `handling_signals()` (the facade's engine inside the
launcher's guard) changes nothing, so the outer one sees every request.
"""

import contextlib
import os
import signal
import socket
import threading
import time

from absl import logging
import tensorflow as tf

from trainer.api import errors
from trainer.guard import checkpoint_files

EXIT_STATUS = 128 + signal.SIGTERM  # Preempted by SIGTERM (or by a peer).
_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_NAMES = {signal.SIGTERM: 'SIGTERM', signal.SIGINT: 'SIGINT'}
SAVE_GRACE_SECONDS = 60  # A second signal's wait for a save under way.
_requested = threading.Event()
_by_peer = threading.Event()
_logged = threading.Event()
_received = []  # The first signal's number (set by the handler, no I/O).
_handlers = []  # {signum: handler} of the innermost handling block.


class PreemptedError(errors.TrainerError):
  """Training stopped on SIGTERM or SIGINT after checkpointing;
  `exit_status` is 128 + that signal."""

  def __init__(self, message, exit_status=EXIT_STATUS):
    super().__init__(message)
    self.exit_status = exit_status


class StoppedBySignal(SystemExit):
  """Ends an Estimator program whose training stopped on SIGTERM / SIGINT
  with a checkpoint: its code is the signal's exit status, as the signal
  would have ended the process; `message` says where to continue."""

  def __init__(self, message, exit_status):
    super().__init__(exit_status)
    self.message = message


def signal_name():
  """'SIGTERM' or 'SIGINT': what asked to stop (SIGTERM for a peer's)."""
  return _NAMES[_received[0]] if _received else 'SIGTERM'


def exit_status():
  """The exit status of a run stopped by the received signal."""
  return 128 + (_received[0] if _received else signal.SIGTERM)


def requested():
  """True once SIGTERM or SIGINT was received inside handling_signals()
  (here or, in a multi-worker job, by a peer). The first True is logged
  here, in the caller's thread: the signal handler itself does no I/O."""
  if _requested.is_set() and not _logged.is_set():
    _logged.set()
    if _by_peer.is_set():
      logging.warning('SIGTERM received by another worker: finishing this '
                      'loop, writing a checkpoint and stopping.')
    else:
      logging.warning(
          '%s: finishing this loop, writing a checkpoint and stopping%s.',
          signal_name(), ' (Ctrl-C again stops at once, without it)'
          if signal_name() == 'SIGINT' else '')
  return _requested.is_set()


def request(peer=False):
  """Asks the running trainer to checkpoint and stop, as SIGTERM does;
  `peer`: another worker of the job received it."""
  if peer and not _requested.is_set():
    _by_peer.set()
  _requested.set()


def reclaim():
  """Re-installs this module's handlers inside handling_signals()
  (TensorFlow may have replaced them at the C level); a no-op outside, or
  off the main thread."""
  if not _handlers or threading.current_thread() is not (
      threading.main_thread()):
    return
  if not _requested.is_set():  # After the first, signals act as before.
    for signum, handler in _handlers[-1].items():
      signal.signal(signum, handler)


def _clear():
  for event in (_requested, _by_peer, _logged):
    event.clear()
  del _received[:]


def _note(signum):
  """Records a received signal (no I/O: called from the signal handler)."""
  if not _received:
    _received.append(signum)
  _requested.set()


_watchers = []  # The running _Watcher, if any.
_fork_hook = []


def _forget_watchers():
  for watcher in _watchers:
    watcher.forget()
  del _watchers[:]


class _Watcher:
  """Sees every SIGTERM / SIGINT as it arrives, through the wakeup fd of
  Python's C-level handler, also while the main thread waits inside
  TensorFlow (a session.run of a long step or TPU loop), where Python's
  own handlers cannot run until it returns and a second signal would go
  unnoticed: the first sets the flag, a second ends the process at once
  with status 128 + that signal (once a save under way in `model_dir`
  is complete, see _let_save_finish)."""

  def __init__(self, model_dir=None):
    self._model_dir = model_dir
    self._reader, self._writer = socket.socketpair()
    self._writer.setblocking(False)
    self.previous_fd = signal.set_wakeup_fd(self._writer.fileno(),
                                            warn_on_full_buffer=False)
    if not _fork_hook:  # A forked child (an input worker) must not write
      os.register_at_fork(after_in_child=_forget_watchers)  # to our fd:
      _fork_hook.append(True)  # one Ctrl-C reaches the whole group.
    _watchers.append(self)
    self._thread = threading.Thread(target=self._watch, daemon=True,
                                    name='trainer-signal-watcher')
    self._thread.start()

  def forget(self):
    """In a forked child: no wakeup fd, the copies of the sockets closed."""
    try:
      signal.set_wakeup_fd(-1)
    except ValueError:  # Not the child's main thread.
      pass
    self._reader.close()
    self._writer.close()

  def _signals(self, timeout=None):
    """The signal numbers received next (waiting at most `timeout` s:
    [] if none came), or None once the watcher is closed."""
    self._reader.settimeout(timeout)
    try:
      data = self._reader.recv(64)
    except socket.timeout:
      return []
    except OSError:
      return None
    return [s for s in data if s in _NAMES] if data else None

  def _saving(self):
    """Whether a checkpoint is being written to model_dir: TF's Saver and
    tf.train.Checkpoint keep its MODEL.ckpt-N_temp/ until the .index is
    complete (see checkpoint_recovery), a state file its temp until it is
    renamed; the lock holder removed any left before the block."""
    try:
      return bool(checkpoint_files.temporary_files(self._model_dir))
    except (tf.errors.OpError, OSError):  # Unlistable: nothing to wait for.
      return False

  def _let_save_finish(self, signum):
    """While a checkpoint is being written to model_dir, waits for it to be
    complete: at most SAVE_GRACE_SECONDS, and no longer once another
    signal comes."""
    if not self._model_dir or not self._saving():
      return
    name = _NAMES[signum]
    os.write(2, (f'{name} again: letting the checkpoint being written to '
                 f'{self._model_dir} complete first (at most '
                 f'{SAVE_GRACE_SECONDS} s; {name} once more exits at '
                 'once).\n').encode())
    deadline = time.monotonic() + SAVE_GRACE_SECONDS
    while self._saving() and time.monotonic() < deadline:
      if self._signals(timeout=0.05) != []:  # Another signal, or closed.
        return

  def _watch(self):
    seen = 0
    while True:
      signums = self._signals()
      if signums is None:
        return
      for signum in signums:
        seen += 1
        if seen == 1:
          _note(signum)
          continue
        self._let_save_finish(signum)
        os.write(2, (f'{_NAMES[signum]} again: exiting at once, without a '
                     'checkpoint of the running step (the latest checkpoint '
                     'stays).\n').encode())
        os._exit(128 + signum)  # pylint: disable=protected-access

  def close(self):
    _watchers.remove(self)
    signal.set_wakeup_fd(self.previous_fd)
    self._writer.close()
    self._reader.shutdown(socket.SHUT_RDWR)
    self._thread.join(timeout=5)
    self._reader.close()


@contextlib.contextmanager
def handling_signals(model_dir=None):
  """Inside the block, SIGTERM and SIGINT set the flag instead of killing;
  a second one ends the process at once, once a checkpoint being written
  to `model_dir` (the directory the block's training saves to) is
  complete. Nested blocks and blocks off the main thread (where Python
  cannot set handlers) change nothing."""
  if _handlers or threading.current_thread() is not threading.main_thread():
    yield
    return
  previous = {s: signal.getsignal(s) or signal.SIG_DFL for s in _SIGNALS}
  watcher = _Watcher(model_dir)
  if watcher.previous_fd != -1:  # The program's own (asyncio's) wakeup fd.
    watcher.close()
    watcher = None

  def handler(signum, frame):
    # No I/O here: the signal may arrive while the main thread writes a log
    # line, and a write from the handler would then raise inside it (and
    # logging would swallow that error, losing the request).
    del frame
    _note(signum)
    if watcher is None:  # The second signal: SIGINT's default action now.
      signal.signal(signum, signal.SIG_DFL if signum == signal.SIGINT
                    else previous[signum])

  _clear()
  _handlers.append({s: handler for s in _SIGNALS})
  for signum in _SIGNALS:
    signal.signal(signum, handler)
  try:
    yield
  finally:
    _handlers.pop()
    for signum, old in previous.items():
      signal.signal(signum, old)
    if watcher is not None:
      watcher.close()
    _clear()  # Later runs in this process are not stopped.


handling_sigterm = handling_signals  # Its name before SIGINT was handled.


def stopped_message(step, model_dir):
  """What a run stopped by the received signal says: where and how to go
  on."""
  what = ('Interrupted (SIGINT)' if signal_name() == 'SIGINT'
          else 'Preempted (SIGTERM)')
  return (f'{what}: stopped at step {step} with a checkpoint in '
          f'{model_dir}; run the same command again to continue.')


def raise_if_requested(step, model_dir):
  """PreemptedError at `step` if SIGTERM or SIGINT was received."""
  if requested():
    raise PreemptedError(stopped_message(step, model_dir), exit_status())
