"""One trainer per model_dir: an exclusive lock on MODEL_DIR/.trainer.lock.

The lock is an flock(2) on a local file, so the kernel releases it when its
process dies, SIGKILL included: a stale lock file never blocks a restart.
The file holds the owner's host, pid and start time for the refusal
message; a clean release empties it, so a record found when taking the
lock is one a killed process left, taken over with a warning. A process
forked by the holder (an input worker) closes its copy of the file, so it
never keeps the lock after the holder is gone. A holder is waited for
WAIT_SECS before a refusal (an evaluation holds it for a moment to recover
an interrupted save).

`locked(model_dir)` holds it inside a block (trainer.main); `hold(
model_dir)` until the process ends (the launcher: a program may train,
evaluate and train again on one model_dir). Object stores (gs://) have no
such lock; there the trainer logs a warning and runs unlocked. A model_dir
that cannot be written is a StorageError naming it. Importing this module
does not import TensorFlow (trainer.main takes the lock before that).
"""

import contextlib
import fcntl
import json
import os
import socket
import time

from absl import logging

from trainer.api import errors

# pylint: disable=g-import-not-at-top  (storage imports TensorFlow: only
# for a model_dir that refuses the lock file)

LOCK_FILE = '.trainer.lock'
WAIT_SECS = 3.0
_POLL_SECS = 0.1
_held = {}  # Real path of a model_dir -> the open lock file (hold()).
_open_handles = set()  # Every lock file open here, closed in forked children.
_fork_hook = []


class ModelDirLockedError(errors.TrainerError, RuntimeError):
  """Another live process holds the model_dir lock."""


def _is_local(path):
  return '://' not in path


def _owner(handle):
  handle.seek(0)
  try:
    return json.loads(handle.read() or '{}')
  except ValueError:
    return {}


def _close_in_child():
  """After fork(), in the child: close the lock files (closing does not
  release the parent's lock; only its last copy closing does)."""
  for handle in list(_open_handles):
    try:
      handle.close()
    except OSError:
      pass
  _open_handles.clear()
  _held.clear()


def _pid_running(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def _warn_taken_over(model_dir, owner):
  """One warning for the record of a holder that did not release it."""
  pid, host = owner.get('pid'), owner.get('host')
  if host == socket.gethostname() and isinstance(pid, int) and (
      not _pid_running(pid)):
    state = 'which is no longer running'
  else:
    state = 'which no longer holds it'
  logging.warning(
      'model_dir %s: taking over the lock left by pid %s on %s (started %s), '
      '%s.', model_dir, pid, host, owner.get('started', '?'), state)


def _open(model_dir):
  try:
    os.makedirs(model_dir, exist_ok=True)
    handle = open(os.path.join(model_dir, LOCK_FILE), 'a+')
  except OSError as e:
    from trainer.guard import storage
    failure = storage.write_failure(e, model_dir)
    if failure is None:
      raise
    raise failure from e
  if not _fork_hook:
    os.register_at_fork(after_in_child=_close_in_child)
    _fork_hook.append(True)
  _open_handles.add(handle)
  return handle


def _close(handle):
  _open_handles.discard(handle)
  handle.close()


def _acquire(model_dir, wait_secs):
  """The open lock file of model_dir, flocked, with this process's record.
  Raises ModelDirLockedError naming the holder if it does not let go
  within wait_secs."""
  deadline = time.monotonic() + wait_secs
  handle = _open(model_dir)
  while True:
    try:
      fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
      break
    except BlockingIOError:
      if time.monotonic() < deadline:
        time.sleep(_POLL_SECS)
        continue
      owner = _owner(handle)
      _close(handle)
      raise ModelDirLockedError(
          f'--model_dir={model_dir} is in use by another trainer (pid '
          f'{owner.get("pid", "?")} on {owner.get("host", "?")}, started '
          f'{owner.get("started", "?")}; lock '
          f'{os.path.join(model_dir, LOCK_FILE)}). Stop it or use another '
          '--model_dir.') from None
  previous = _owner(handle)
  if previous.get('pid') is not None:
    _warn_taken_over(model_dir, previous)
  handle.seek(0)
  handle.truncate()
  handle.write(json.dumps({
      'pid': os.getpid(), 'host': socket.gethostname(),
      'started': time.strftime('%Y-%m-%d %H:%M:%S')}))
  handle.flush()
  return handle


def _release(handle):
  """Empties the record (a clean release) and lets go."""
  try:
    handle.seek(0)
    handle.truncate()
    handle.flush()
  except OSError:
    pass  # The record stays; the next holder warns, nothing else.
  fcntl.flock(handle, fcntl.LOCK_UN)
  _close(handle)


def _unlocked_warning(model_dir):
  logging.warning('--model_dir=%s is not a local path: it is not locked '
                  'against a second trainer.', model_dir)


@contextlib.contextmanager
def locked(model_dir, wait_secs=WAIT_SECS):
  """Holds the lock of `model_dir` (created if missing) inside the block.

  Raises ModelDirLockedError naming the holder if another process keeps it
  for wait_secs; StorageError if model_dir cannot be written.
  """
  if not _is_local(model_dir):
    _unlocked_warning(model_dir)
    yield
    return
  handle = _acquire(model_dir, wait_secs)
  try:
    yield
  finally:
    _release(handle)


def _moved_hold(model_dir):
  """The path under which hold() took the lock file now in model_dir (a
  held model_dir renamed or moved: the flock goes with the file), or
  None."""
  try:
    found = os.stat(os.path.join(model_dir, LOCK_FILE))
  except OSError:
    return None
  for key, handle in _held.items():
    if handle is None:
      continue
    try:
      mine = os.fstat(handle.fileno())
    except (OSError, ValueError):
      continue
    if (mine.st_dev, mine.st_ino) == (found.st_dev, found.st_ino):
      return key
  return None


def held_here(model_dir):
  """Whether this process holds model_dir's lock by hold() (under this
  path, or under the one it had before it was renamed)."""
  key = os.path.realpath(model_dir)
  if key in _held:
    return True
  moved = _is_local(model_dir) and _moved_hold(model_dir)
  if moved:  # Keyed by the new path from now on.
    _held[key] = _held.pop(moved)
    return True
  return False


def hold(model_dir, wait_secs=WAIT_SECS):
  """Takes model_dir's lock until the process ends (or release_all()); a
  no-op if this process holds it already. Raises as locked() does."""
  if not _is_local(model_dir):
    if model_dir not in _held:
      _unlocked_warning(model_dir)
      _held[model_dir] = None
    return
  if not held_here(model_dir):
    _held[os.path.realpath(model_dir)] = _acquire(model_dir, wait_secs)


@contextlib.contextmanager
def holding_briefly(model_dir):
  """Inside the block, this process holds model_dir's lock if it already
  did, or if nobody else holds it (then released at the end); yields
  whether it does. Never waits; neither another holder nor a model_dir
  that cannot be written is an error here."""
  if not _is_local(model_dir) or held_here(model_dir):
    yield held_here(model_dir)
    return
  from trainer.guard import storage
  try:
    handle = _acquire(model_dir, wait_secs=0)
  except (ModelDirLockedError, storage.StorageError):  # Read-only: no need.
    yield False
    return
  try:
    yield True
  finally:
    _release(handle)


def release_all():
  """Releases every lock hold() took (tests; a process's end does it)."""
  for handle in _held.values():
    if handle is not None:
      _release(handle)
  _held.clear()
