"""A write to model_dir that the storage refuses, as one error to act on.

A full disk, a read-only file system, an exhausted quota or a denied
permission surface deep inside TensorFlow (`ResourceExhaustedError: .../
model.ckpt-40_temp/part-00000-of-00001.data-00000-of-00001.tempstate...; No
space left on device`) or Python (`OSError: [Errno 30] Read-only file
system`). `write_failure(error, model_dir)` names the directory, the cause
and what to do, and which complete checkpoint is kept; `reporting_write_
failures(model_dir)` raises it in place of such an error, after removing
the temporary files of the failed save (a failed save never replaces the
`checkpoint` state, so the previous checkpoint stays the latest). A
gs:// model_dir out of reach (no network) is one such error too, after
TensorFlow's own retries (about 20 s).
Nothing is deleted but temporary files.
"""

import contextlib
import errno
import os
import re

import tensorflow as tf

from trainer.api import errors
from trainer.guard import checkpoint_files
from trainer.guard import checkpoint_recovery
from trainer.guard import peers

# errno -> (what the OS says, what to do about it).
_CAUSES = {
    errno.ENOSPC: ('No space left on device',
                   'free space there or use a model_dir on a disk with room'),
    errno.EDQUOT: ('Disk quota exceeded',
                   'raise the quota or use a model_dir with room'),
    errno.EROFS: ('Read-only file system',
                  'use a model_dir on a writable file system'),
    errno.EFBIG: ('File too large',
                  'raise the file size limit (ulimit -f) or use another '
                  'model_dir'),
    errno.EACCES: ('Permission denied',
                   'give this user write access to it or use another '
                   'model_dir'),
}
_PATH_BEFORE_CAUSE = re.compile(r'(\S+?)[;:]? *(?:' + '|'.join(
    re.escape(text) for text, _ in _CAUSES.values()) + ')')


# What TensorFlow's file systems say when the storage service is out of
# reach (gs:// without network or DNS, a proxy that refuses).
_UNREACHABLE = ('Error executing an HTTP request', 'Could not resolve host',
                "Couldn't connect to server", 'Timeout was reached',
                'Failed to connect')


class StorageError(errors.TrainerError, OSError):
  """model_dir's storage refused a write (space, quota, permission)."""

  def __str__(self):
    return self.strerror


def _cause(error):
  """(errno, the OS's text) of a refused write, or None."""
  if isinstance(error, OSError) and not isinstance(error, StorageError) and (
      error.errno in _CAUSES):
    return error.errno, _CAUSES[error.errno][0]
  if isinstance(error, tf.errors.OpError):
    for number, (text, _) in _CAUSES.items():
      if text in (error.message or ''):
        return number, text
  return None


def refused_write(error):
  """(errno, what the OS says) of an error of a write the storage refused
  (space, quota, read-only, permission), else None."""
  return _cause(error)


def refused_path(error, default=None):
  """The file or directory a refused write's error names, else default."""
  if isinstance(error, OSError) and error.filename:
    return os.fspath(error.filename)
  match = _PATH_BEFORE_CAUSE.search(getattr(error, 'message', '') or '')
  return match.group(1) if match else default


def _where(error, model_dir):
  """What was being written: 'saving checkpoint NAME', or the file or
  directory the refused write named (else model_dir)."""
  path = refused_path(error, model_dir)
  saving = (re.search(r'([^/]+)_temp/', path) or
            re.search(r'([^/]+-\d+)\.(?:index|data-\d{5}-of-\d{5})', path))
  return f'saving checkpoint {saving.group(1)}' if saving else (
      f'writing {path}')


def _kept(model_dir):
  path = checkpoint_files.latest_complete(model_dir)
  if path is None:
    return 'No checkpoint was written.'
  return (f'The last complete checkpoint, {os.path.basename(path)}, is '
          'kept and loads.')


def unreachable(error, model_dir):
  """StorageError for an error saying model_dir's storage service cannot be
  reached (a gs:// model_dir without network); None for any other."""
  if not isinstance(error, tf.errors.OpError) or model_dir is None:
    return None
  message = error.message or ''
  if not any(sign in message for sign in _UNREACHABLE):
    return None
  if peers.names_cluster_task(message):  # A task of the cluster, not storage.
    return None
  detail = re.sub(r'\s+', ' ', message.split(' when ')[0]).strip()
  return StorageError(
      errno.EHOSTUNREACH,
      f'cannot reach model_dir {model_dir}: {detail}. Check the network '
      'and the credentials for this storage (for gs://: gcloud auth '
      'application-default login, or GOOGLE_APPLICATION_CREDENTIALS), or '
      'use a local model_dir.')


def _outside(path, model_dir):
  """Whether local `path` lies outside model_dir (an export directory)."""
  if not path or '://' in path or '://' in model_dir:
    return False
  inside = os.path.realpath(model_dir) + os.sep
  return not (os.path.realpath(path) + os.sep).startswith(inside)


def write_failure(error, model_dir):
  """StorageError for an error of a write the storage refused (space,
  quota, read-only, permission) in model_dir; None for any other error,
  and for a refused write outside model_dir (an export directory:
  trainer/runtime/failures.py names it)."""
  cause = _cause(error)
  if cause is None or model_dir is None or _outside(
      refused_path(error), model_dir):
    return None
  number, text = cause
  where = _where(error, model_dir)
  return StorageError(
      number,
      f'cannot write to model_dir {model_dir}: {text} '
      f'({errno.errorcode.get(number, number)}, {where}). '
      f'{_kept(model_dir)} To continue, {_CAUSES[number][1]}, then run the '
      'same command again.')


@contextlib.contextmanager
def reporting_write_failures(model_dir, owner=True):
  """Inside the block, a write the storage refuses raises StorageError (see
  write_failure), as does storage out of reach (see unreachable). The `owner` of model_dir (the lock's holder) first
  removes what the failed save left (checkpoint_recovery.recover: its
  temporary files; a checkpoint it cut short is moved aside)."""
  try:
    yield
  except (tf.errors.OpError, OSError) as e:
    failure = unreachable(e, model_dir)
    if failure is not None:
      raise failure from e
    failure = write_failure(e, model_dir)
    if failure is None:
      raise
    if owner:
      try:
        checkpoint_recovery.recover(model_dir)
      except (tf.errors.OpError, OSError):
        checkpoint_files.remove_temporary_files(model_dir)
      failure = write_failure(e, model_dir)  # What is kept, after it.
    raise failure from e
