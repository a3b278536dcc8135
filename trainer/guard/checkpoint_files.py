"""Which checkpoints in a model_dir are complete, from their files alone.

A TF1 (V2-format) checkpoint PREFIX is PREFIX.index, a table of one
BundleEntryProto per tensor (its data shard, offset and size), and
PREFIX.data-SSSSS-of-NNNNN. TensorFlow opens a checkpoint whose data file
was cut short and fails only when a tensor past the cut is read (`Read
less bytes than requested`, naming no file). So a checkpoint counts as
complete here only when its index reads and every data shard is at least
as long as the tensors the index places in it.

The index is a LevelDB-format table (tensorflow/core/lib/io/table_builder):
a footer with the handle of an index block, whose entries are the handles
of data blocks, whose entries are (tensor name, BundleEntryProto); the
header entry (name '') is a BundleHeaderProto. Blocks are stored
uncompressed; a compressed one makes the sizes unknown (then only
loadability counts).
"""

import collections
import os
import re
import struct

import tensorflow as tf
from tensorflow.core.protobuf import tensor_bundle_pb2

_FOOTER_BYTES = 48  # Two block handles (padded to 40 bytes) + 8-byte magic.
_TABLE_MAGIC = 0xdb4775248b80fb57
_BLOCK_TRAILER_BYTES = 5  # Compression type + CRC.
CHECKPOINT_FILE = re.compile(
    r'^(?P<prefix>.+)\.(?:index|meta|data-(?P<shard>\d{5})-of-(?P<shards>'
    r'\d{5}))$')
_TEMPORARY = re.compile(r'(_temp|\.tmp[0-9a-f]{32}|\.tempstate\d+)$')
_STEP = re.compile(r'-(\d+)$')


class UnreadableIndexError(ValueError):
  """A checkpoint index that is not a readable table."""


def _varint(data, pos):
  value = shift = 0
  while True:
    if pos >= len(data):
      raise UnreadableIndexError('truncated varint')
    byte = data[pos]
    pos += 1
    value |= (byte & 0x7f) << shift
    shift += 7
    if byte < 0x80:
      return value, pos


def _block_entries(data, offset, size):
  """(key, value) of the table block at offset/size of `data`; None if the
  block is compressed."""
  if offset + size + _BLOCK_TRAILER_BYTES > len(data) or size < 4:
    raise UnreadableIndexError(f'block at {offset} (+{size}) past the end')
  if data[offset + size] != 0:
    return None
  block = data[offset:offset + size]
  restarts, = struct.unpack('<I', block[-4:])
  end = len(block) - 4 - 4 * restarts
  pos, key, entries = 0, b'', []
  while pos < end:
    shared, pos = _varint(block, pos)
    unshared, pos = _varint(block, pos)
    length, pos = _varint(block, pos)
    key = key[:shared] + block[pos:pos + unshared]
    pos += unshared
    entries.append((key, block[pos:pos + length]))
    pos += length
  return entries


def shard_extents(index_bytes):
  """({shard id: bytes its tensors need}, number of shards) from the bytes
  of a checkpoint's .index; None when its blocks are compressed. Raises
  UnreadableIndexError if they are not a table."""
  if len(index_bytes) < _FOOTER_BYTES:
    raise UnreadableIndexError(f'{len(index_bytes)} bytes, shorter than a footer')
  footer = index_bytes[-_FOOTER_BYTES:]
  if struct.unpack('<Q', footer[-8:])[0] != _TABLE_MAGIC:
    raise UnreadableIndexError('no table footer (cut short?)')
  _, pos = _varint(footer, 0)  # The metaindex block's handle.
  _, pos = _varint(footer, pos)
  index_offset, pos = _varint(footer, pos)
  index_size, _ = _varint(footer, pos)
  handles = _block_entries(index_bytes, index_offset, index_size)
  if handles is None:
    return None
  extents = collections.Counter()
  num_shards = None
  for _, handle in handles:
    offset, pos = _varint(handle, 0)
    size, _ = _varint(handle, pos)
    entries = _block_entries(index_bytes, offset, size)
    if entries is None:
      return None
    for key, value in entries:
      if key == b'':
        num_shards = tensor_bundle_pb2.BundleHeaderProto.FromString(
            value).num_shards
        continue
      entry = tensor_bundle_pb2.BundleEntryProto.FromString(value)
      if entry.size:
        extents[entry.shard_id] = max(extents[entry.shard_id],
                                      entry.offset + entry.size)
  if num_shards is None:
    raise UnreadableIndexError('no header entry')
  return dict(extents), num_shards


def step_of(prefix):
  """The -N step suffix of a checkpoint prefix (-1 without one)."""
  match = _STEP.search(prefix)
  return int(match.group(1)) if match else -1


def problem(prefix):
  """Why checkpoint `prefix` is not complete (a short phrase), or None if
  it is: its index reads and every data shard holds what the index says."""
  index = prefix + '.index'
  if not tf.io.gfile.exists(index):
    return 'no .index file'
  with tf.io.gfile.GFile(index, 'rb') as f:
    index_bytes = f.read()
  try:
    found = shard_extents(index_bytes)
  except (UnreadableIndexError, ValueError) as e:  # DecodeError is a ValueError.
    return f'unreadable .index ({e})'
  if found is not None:
    extents, num_shards = found
    for shard in range(num_shards):
      data = f'{prefix}.data-{shard:05d}-of-{num_shards:05d}'
      if not tf.io.gfile.exists(data):
        return f'{os.path.basename(data)} is missing'
      size = tf.io.gfile.stat(data).length
      if size < extents.get(shard, 0):
        return (f'{os.path.basename(data)} has {size} of the '
                f'{extents[shard]} bytes its index lists (cut short)')
  try:
    tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  except (tf.errors.OpError, ValueError, RuntimeError) as e:
    return f'does not load ({type(e).__name__})'
  return None


def checkpoints_by_prefix(model_dir):
  """{prefix (base name): set of its file names} of model_dir's
  checkpoint files, temporary files left out."""
  by_prefix = collections.defaultdict(set)
  if not tf.io.gfile.isdir(model_dir):
    return by_prefix
  for name in tf.io.gfile.listdir(model_dir):
    name = name.rstrip('/')
    match = CHECKPOINT_FILE.match(name)
    if match and not _TEMPORARY.search(name):
      by_prefix[match.group('prefix')].add(name)
  return by_prefix


def latest_complete(model_dir):
  """Path of model_dir's newest complete checkpoint, by step; None if
  none."""
  for prefix in sorted(checkpoints_by_prefix(model_dir), key=step_of,
                       reverse=True):
    path = os.path.join(model_dir, prefix)
    if problem(path) is None:
      return path
  return None


def is_temporary(name):
  """Whether `name` is a temporary file or directory of TF's Saver (a
  save's _temp directory, a state file or .tempstate being written)."""
  return bool(_TEMPORARY.search(name.rstrip('/')))


def temporary_files(model_dir):
  """Names of model_dir's temporary files and directories (is_temporary):
  a save under way, or what an interrupted one left."""
  return [n.rstrip('/') for n in tf.io.gfile.listdir(model_dir)
          if is_temporary(n)]


def remove_temporary_files(model_dir):
  """Removes what interrupted or failed saves leave in model_dir (see
  is_temporary); returns their names (the caller says so)."""
  if not tf.io.gfile.isdir(model_dir):
    return []
  removed = []
  for name in temporary_files(model_dir):
    path = os.path.join(model_dir, name)
    try:
      if tf.io.gfile.isdir(path):
        tf.io.gfile.rmtree(path)
      else:
        tf.io.gfile.remove(path)
    except tf.errors.NotFoundError:
      continue
    removed.append(name)
  return sorted(removed)
