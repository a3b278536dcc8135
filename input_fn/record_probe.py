"""What a split's records hold, learnt from its first record in plain Python.

The input pipeline picks its path (vectorised raw batches or per-example
decoding) when the graph is built, before any TensorFlow op runs, and the
same code must work in eager mode (tf2 runner) and in a TF1 graph
(TPUEstimator); so the first record is read here with tf.io.gfile (local or
gs://), not with tf.data.
"""

import collections
import struct

from google.protobuf import message
import tensorflow as tf

from input_fn import features as feature_lib

_HEADER_BYTES = 12  # uint64 length + uint32 masked CRC of the length.
_MAX_RECORD_BYTES = 1 << 30  # A larger length field is corruption.

RawShape = collections.namedtuple('RawShape', ['height', 'width', 'channels'])


def first_record(files):
  """Bytes of the first record of the first non-empty file; None if none.

  Returns None too when that record cannot be read (truncated or corrupt):
  the caller then takes the general path, whose reader reports it.
  """
  for path in files:
    with tf.io.gfile.GFile(path, 'rb') as f:
      header = f.read(_HEADER_BYTES)
      if not header:
        continue
      if len(header) < _HEADER_BYTES:
        return None
      length, = struct.unpack('<Q', header[:8])
      if length > _MAX_RECORD_BYTES:
        return None
      data = f.read(length)
      return data if len(data) == length else None
  return None


def raw_shape(files):
  """RawShape of the first example when it is a raw image, else None.

  None also for JPEG/PNG, for a record that is not a tf.train.Example, and
  for an empty split.
  """
  record = first_record(files)
  if record is None:
    return None
  try:
    example = tf.train.Example.FromString(record)
  except message.DecodeError:
    return None
  feature = example.features.feature

  def value(key, kind):
    values = getattr(feature[key], kind).value if key in feature else []
    return values[0] if len(values) == 1 else None

  if value(feature_lib.FORMAT, 'bytes_list') != feature_lib.RAW:
    return None
  shape = RawShape(value(feature_lib.HEIGHT, 'int64_list'),
                   value(feature_lib.WIDTH, 'int64_list'),
                   value(feature_lib.CHANNELS, 'int64_list'))
  if any(d is None or d <= 0 for d in shape):
    return None
  return RawShape(*(int(d) for d in shape))
