"""One trainer per model_dir: an exclusive lock on MODEL_DIR/.trainer.lock.

The lock is an flock(2) on a local file, so the kernel releases it when its
process dies, SIGKILL included: a stale lock file never blocks a restart.
It holds the owner's host, pid and start time for the refusal message.
Object stores (gs://) have no such lock; there the trainer logs a warning and
runs unlocked.
"""

import contextlib
import fcntl
import json
import os
import socket
import time

from absl import logging

from trainer.api import errors

LOCK_FILE = '.trainer.lock'


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


@contextlib.contextmanager
def locked(model_dir):
  """Holds the lock of `model_dir` (created if missing) inside the block.

  Raises ModelDirLockedError naming the holder if another process has it.
  """
  if not _is_local(model_dir):
    logging.warning('--model_dir=%s is not a local path: it is not locked '
                    'against a second trainer.', model_dir)
    yield
    return
  os.makedirs(model_dir, exist_ok=True)
  path = os.path.join(model_dir, LOCK_FILE)
  with open(path, 'a+') as handle:
    try:
      fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      owner = _owner(handle)
      raise ModelDirLockedError(
          f'--model_dir={model_dir} is in use by another trainer (pid '
          f'{owner.get("pid", "?")} on {owner.get("host", "?")}, started '
          f'{owner.get("started", "?")}; lock {path}). Stop it or use another '
          '--model_dir.') from None
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps({
        'pid': os.getpid(), 'host': socket.gethostname(),
        'started': time.strftime('%Y-%m-%d %H:%M:%S')}))
    handle.flush()
    try:
      yield
    finally:
      fcntl.flock(handle, fcntl.LOCK_UN)
