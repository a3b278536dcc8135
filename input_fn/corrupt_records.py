"""Finds which TFRecord file is corrupt, and counts what skipping it loses.

TF's reader reports `DataLossError: corrupted record at 4777` without the
file, and reads a file cut inside a record as if it ended before it
(record_framing finds those). On a corrupt record tf.data's TFRecordDataset moves on to the next
file, so `ignore_errors()` skips the corrupt record and the rest of its file;
the lost tail cannot be split into records (its length fields are not to be
trusted), so it is counted in bytes.
"""

import collections
import re

from absl import logging
import tensorflow as tf

from input_fn import record_framing
from input_fn import tracing
from trainer.api import errors

_OFFSET = re.compile(r'(?:corrupted|truncated) record at (\d+)')

FileScan = collections.namedtuple(
    'FileScan', ['path', 'records', 'error', 'offset', 'bytes_skipped'])
FileScan.__doc__ = """One file: records read before any corruption, error
message (None if clean), byte offset of the corrupt record, bytes after it."""


class CorruptRecordError(errors.TrainerError, tf.errors.DataLossError):
  """A DataLossError whose message names the corrupt file(s)."""

  def __init__(self, message):
    super().__init__(None, None, message)


def _first_line(message):
  """The error text without TF's '{{function_node ...}}' prefix."""
  text = message.split('\n')[0]
  return re.sub(r'\{\{[^}]*\}\}\s*', '', text).replace(
      ' [Op:IteratorGetNext]', '').replace(' name: ', '').strip()


class TruncatedRecordError(CorruptRecordError, errors.TrainerError):
  """A TFRecord file ends inside a record (record_framing.find_cut)."""


def truncated_files_error(cuts, flag='--skip_corrupt_records'):
  """TruncatedRecordError naming each cut file, the offset and `flag`."""
  what = ('; '.join(record_framing.describe(c) for c in cuts))
  return TruncatedRecordError(
      f'Truncated TFRecord file{"s" if len(cuts) > 1 else ""}: {what}. '
      'TensorFlow would read the records before the cut and drop the rest '
      f'without a word. Replace the file{"s" if len(cuts) > 1 else ""}, or '
      f'pass {flag} to use the records before the cut on purpose.')


def scan_file(path):
  """FileScan of one TFRecord file: reads it to the end or to the corruption
  (a local file cut short counts as corrupt at the cut)."""
  cut = record_framing.find_cut(path) if record_framing.is_checkable(
      path) else None
  if cut is not None:
    return FileScan(path, cut.records,
                    f'truncated record at {cut.offset} (the file is cut '
                    'short)', cut.offset, cut.size - cut.offset)
  dataset = tf.data.TFRecordDataset(path)
  try:
    count = int(dataset.reduce(
        tf.constant(0, tf.int64),
        tracing.as_written(lambda n, _: n + 1)).numpy())
    return FileScan(path, count, None, None, 0)
  except tf.errors.DataLossError:
    pass
  count = 0
  try:
    for _ in dataset:
      count += 1
  except tf.errors.DataLossError as e:
    message = _first_line(e.message)
    match = _OFFSET.search(message)
    offset = int(match.group(1)) if match else None
    skipped = (tf.io.gfile.stat(path).length - offset) if match else None
    return FileScan(path, count, message, offset, skipped)
  return FileScan(path, count, None, None, 0)  # Not reproducible: clean.


def scan_files(files):
  """FileScans of `files`, in order."""
  return [scan_file(path) for path in files]


def describe(scans):
  """Lines naming each corrupt file, its offset and what skipping it loses."""
  lines = []
  for s in scans:
    if s.error is None:
      continue
    lost = (f'; skipping drops the last {s.bytes_skipped} bytes of the file'
            if s.bytes_skipped is not None else '')
    lines.append(f'  {s.path}: {s.error} ({s.records} good records before '
                 f'it{lost})')
  return lines


def corrupt_file_error(files, cause=None):
  """CorruptRecordError naming the corrupt ones among `files`.

  `cause` is the DataLossError training raised; if no file reproduces it, the
  error says so and keeps the original message.
  """
  logging.info('Data loss while reading; scanning %d files for the corrupt '
               'one.', len(files))
  lines = describe(scan_files(files))
  if lines:
    return CorruptRecordError(
        f'Corrupt TFRecord file{"s" if len(lines) > 1 else ""} (rerun with '
        '--skip_corrupt_records to skip corrupt records and count them):\n' +
        '\n'.join(lines))
  original = _first_line(cause.message) if cause is not None else ''
  return CorruptRecordError(
      f'Data loss while reading, but none of the {len(files)} files '
      f'({files[0]} ...) is corrupt when read again: {original}')
