"""Whether a TFRecord file ends where its last record ends.

TensorFlow's reader takes a file that ends inside a record for one that
ends there (measured on TF 2.15 and 2.20: no error, the cut record and
everything after it silently unused). A TFRecord is a sequence of
[uint64 length][uint32 CRC of it][length bytes][uint32 CRC of them], so a
walk over the length fields alone, seeking past each record's data, finds
where the records end, reading 12 bytes per record. That check is cheap on
a local disk; on an object store (gs://) it would read every file, and
objects there are written atomically (an interrupted upload leaves no
object), so remote files are not walked (is_checkable).
"""

import collections
import os
import struct

from trainer.api import errors
from trainer.compat import record_reader

_HEADER_BYTES = 12  # uint64 length + uint32 masked CRC of the length.
_FOOTER_BYTES = 4  # uint32 masked CRC of the data.

Cut = collections.namedtuple('Cut', ['path', 'offset', 'size', 'records',
                                     'record_bytes'])
Cut.__doc__ = """A file cut short: the record starting at byte `offset` of
its `size` bytes needs `record_bytes`; `records` complete ones precede it."""

_checked = {}  # (path, size, mtime) -> Cut or None.


class DanglingLinkError(errors.TrainerError, FileNotFoundError):
  """A data file is a symbolic link to nothing."""

  def __str__(self):
    return self.strerror


def check_target(path, what='TFRecord file'):
  """DanglingLinkError if local file `path` is a symbolic link whose target
  does not exist (a glob lists it; reading it fails mid-run)."""
  if is_checkable(path) and os.path.islink(path) and not os.path.exists(
      path):
    raise DanglingLinkError(
        2, f'{what} {path} is a symbolic link to {os.readlink(path)}, which '
        'does not exist: fix the link or remove it.')


def is_checkable(path):
  """Local files are walked; remote ones (scheme://) are not."""
  return '://' not in path or path.startswith('file://')


def find_cut(path):
  """Cut if local file `path` ends inside a record, else None. Cached per
  (path, size, modification time)."""
  path = path[len('file://'):] if path.startswith('file://') else path
  stat = os.stat(path)
  key = (path, stat.st_size, stat.st_mtime_ns)
  if key not in _checked:
    cut = _walk(path, stat.st_size)
    _checked[key] = None if cut and _corrupt(path) else cut
  return _checked[key]


def _corrupt(path):
  """Whether TensorFlow's reader calls the file corrupt (a damaged length
  field looks like a cut to the walk; TF's own error names that one)."""
  return 'corrupted record' in (record_reader.data_loss(path) or '')


def _walk(path, size):
  offset = records = 0
  with open(path, 'rb') as f:
    while offset < size:
      f.seek(offset)
      header = f.read(_HEADER_BYTES)
      length = (struct.unpack('<Q', header[:8])[0]
                if len(header) == _HEADER_BYTES else None)
      needed = (_HEADER_BYTES + length + _FOOTER_BYTES
                if length is not None else _HEADER_BYTES)
      if offset + needed > size:
        return Cut(path, offset, size, records, needed)
      offset += needed
      records += 1
  return None


def describe(cut):
  """'PATH is cut short: ...' naming the offset and what is missing."""
  return (f'{cut.path} is cut short: the record at byte {cut.offset} needs '
          f'{cut.record_bytes} bytes, the file has {cut.size - cut.offset} '
          f'left ({cut.records} complete records before it)')


def find_cuts(paths):
  """Cuts of the local files among `paths`, in order."""
  return [cut for cut in map(find_cut, filter(is_checkable, paths))
          if cut is not None]
