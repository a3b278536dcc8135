"""Checks every file a program's tf.data.TFRecordDataset reads, for the
launcher (a run-time patch of TensorFlow's reader class).

`install(check)` makes TFRecordDataset call `check(path)` on each of its
files before reading it; `check` raises (an exception of the project's,
naming the file) for a file that must not be read. File names known when
the dataset is made (strings, lists, numpy arrays, eager tensors, graph
constants) are checked then, so the program fails before training; names
known only at run time (`list_files(...).interleave(TFRecordDataset)`)
are checked as each file is opened, by a tf.py_function in front of the
reader, whose failure surfaces as an OpError that `raised_by_check(error)`
recognises. Compressed files (compression_type set) are not checked.
TFRecordDatasetV1 (tf.compat.v1.data) wraps V2, so it is covered too.
"""

import functools
import threading

import numpy as np
import tensorflow as tf

_MARK = '_trainer_checked'
_ERROR_MARK = '[trainer.legacy check] '
_local = threading.local()


def _static_names(filenames):
  """The file names `filenames` holds when they are known now, else None."""
  if isinstance(filenames, (str, bytes)):
    values = [filenames]
  elif isinstance(filenames, (list, tuple)) and all(
      isinstance(f, (str, bytes)) for f in filenames):
    values = list(filenames)
  elif isinstance(filenames, np.ndarray):
    values = filenames.reshape(-1).tolist()
  elif isinstance(filenames, tf.Tensor):
    value = tf.get_static_value(filenames)
    if value is None:
      return None
    values = np.asarray(value).reshape(-1).tolist()
  else:
    return None
  return [v.decode() if isinstance(v, bytes) else v for v in values]


def _run_time_checked(filenames, check):
  """`filenames` (a tensor or dataset of names) as a dataset whose names
  are checked as they are read."""
  if not isinstance(filenames, tf.data.Dataset):
    filenames = tf.convert_to_tensor(filenames, tf.string)
    filenames = (tf.data.Dataset.from_tensors(filenames)
                 if filenames.shape.rank == 0 else
                 tf.data.Dataset.from_tensor_slices(filenames))

  def checked(name):
    try:
      check(name.numpy().decode())
    except Exception as e:  # pylint: disable=broad-except
      raise ValueError(f'{_ERROR_MARK}{e}') from None
    return name

  return filenames.map(
      lambda name: tf.ensure_shape(
          tf.py_function(checked, [name], tf.string), []))


def install(check):
  """Makes TFRecordDataset(filenames, compression_type=None, ...) call
  check(path) for each file (see the module docstring). Idempotent."""
  cls = tf.data.TFRecordDataset
  if getattr(cls.__init__, _MARK, False):
    return
  original = cls.__init__

  @functools.wraps(original)
  def __init__(self, filenames, compression_type=None, *args, **kwargs):
    if not compression_type and not getattr(_local, 'inside', False):
      names = _static_names(filenames)
      if names is not None:
        for name in names:
          check(name)
      else:
        filenames = _run_time_checked(filenames, check)
    _local.inside = True  # (V1 makes a V2 of the same names.)
    try:
      original(self, filenames, compression_type, *args, **kwargs)
    finally:
      _local.inside = False

  setattr(__init__, _MARK, True)
  cls.__init__ = __init__


def raised_by_check(error):
  """The check's message if the OpError `error` is a run-time check's
  failure (see install), else None."""
  if not isinstance(error, tf.errors.OpError):
    return None
  message = error.message or ''
  start = message.find(_ERROR_MARK)
  if start < 0:
    return None
  return message[start + len(_ERROR_MARK):].split('\n')[0].strip()
