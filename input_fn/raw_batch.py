"""Vectorised decoding and pad_crop of a batch of raw-image records.

A raw record (features.py) holds H*W*C uint8 pixels in HWC order. When every
record of a batch is raw with one shape, the whole batch decodes with one
parse_example and one decode_raw. pad_crop augments the batch at once too:
an example's crop, read row by row, is one contiguous window of its image's
bytes, so one tf.strings.substr crops every example at its own offset.
Two ways to pad for it: `pad` pads every side (costly, done once for the
in-memory table; then `crop` only drops each row's surplus bytes), and
`pad_rows` adds zero rows only (one string join, per batch when streaming;
then `crop_rows_padded` zeroes the columns that wrapped into a neighbouring
row). Nothing here loops over examples.
"""

import tensorflow as tf

from input_fn import features as feature_lib


def parse(records):
  """Parsed features of a [batch] string tensor of serialized examples."""
  return tf.io.parse_example(records, feature_lib.FEATURE_SPEC)


def uniform(parsed, shape):
  """Scalar bool: every parsed record is raw, of `shape` (H, W, C), and its
  image/encoded holds exactly H*W*C bytes."""
  height, width, channels = shape
  return tf.reduce_all(
      tf.equal(parsed[feature_lib.FORMAT], feature_lib.RAW)
      & tf.equal(parsed[feature_lib.HEIGHT], height)
      & tf.equal(parsed[feature_lib.WIDTH], width)
      & tf.equal(parsed[feature_lib.CHANNELS], channels)
      & tf.equal(tf.strings.length(parsed[feature_lib.ENCODED]),
                 height * width * channels))


def _batch_dim(strings):
  """The static batch size of a [batch] string tensor, -1 if unknown."""
  return strings.shape[0] if strings.shape[0] is not None else -1


def decode(encoded, shape):
  """uint8 [batch, H, W, C] from the raw bytes of images of `shape`."""
  return tf.reshape(tf.io.decode_raw(encoded, tf.uint8),
                    [_batch_dim(encoded), *shape])


def pad(encoded, shape, margin):
  """Raw bytes of images of `shape`, zero-padded by `margin` pixels on each
  side, then 2 * margin * C zero bytes so that every crop window of `crop`
  lies inside the string. A string op per image row: for the in-memory
  table, padded once."""
  height, width, channels = shape
  row = width * channels
  starts = tf.range(height)[tf.newaxis, :] * row
  rows = tf.strings.substr(encoded[:, tf.newaxis], starts,
                           tf.fill(tf.shape(starts), row))  # [batch, H]
  side = b'\0' * (margin * channels)
  body = tf.strings.reduce_join(tf.strings.join([side, rows, side]), axis=1)
  edge = b'\0' * (margin * (width + 2 * margin) * channels)
  tail = b'\0' * (2 * margin * channels)
  return tf.strings.join([edge, body, edge + tail])


def crop(padded, offsets, shape, margin):
  """uint8 [batch, H, W, C]: for example i, the H x W window whose top-left
  corner is offsets[i] = (dy, dx), 0 <= dy, dx <= 2 * margin, of its image
  padded by `pad`: H rows of the padded width from (dy * (W + 2 * margin) +
  dx) * C bytes in, of which the first W * C bytes of each are kept."""
  height, width, channels = shape
  padded_row = (width + 2 * margin) * channels
  starts = offsets[:, 0] * padded_row + offsets[:, 1] * channels
  windows = tf.strings.substr(padded, starts,
                              tf.fill(tf.shape(starts), height * padded_row))
  batch = _batch_dim(padded)
  pixels = tf.reshape(tf.io.decode_raw(windows, tf.uint8),
                      [batch, height, padded_row])[:, :, :width * channels]
  return tf.reshape(pixels, [batch, height, width, channels])


def pad_rows(encoded, shape, margin):
  """Raw bytes of images of `shape` with (margin * W + margin) * C zero bytes
  before and after: margin zero rows above and below, and room for every
  window of `crop_rows_padded`. One string join: cheap enough per batch."""
  height, width, channels = shape
  zeros = b'\0' * ((margin * width + margin) * channels)
  return tf.strings.join([zeros, encoded, zeros])


def crop_rows_padded(padded, offsets, shape, margin):
  """uint8 [batch, H, W, C]: for example i, the H x W crop whose top-left
  corner is offsets[i] = (dy, dx), 0 <= dy, dx <= 2 * margin, of its image
  zero-padded by `margin` on every side (pixel (r, c) of the crop is pixel
  (r + dy - margin, c + dx - margin) of the image, 0 outside it).

  `padded` comes from `pad_rows`. The crop's pixels, read row by row, are
  one contiguous window of `padded` starting (dy * W + dx) * C bytes in; the
  columns that ran into a neighbouring row (those outside the image) are
  zeroed, which costs a broadcast multiply that `crop` does without.
  """
  height, width, channels = shape
  starts = (offsets[:, 0] * width + offsets[:, 1]) * channels
  windows = tf.strings.substr(
      padded, starts, tf.fill(tf.shape(starts), height * width * channels))
  pixels = tf.reshape(tf.io.decode_raw(windows, tf.uint8),
                      [_batch_dim(padded), height, width, channels])
  source_column = (tf.range(width)[tf.newaxis, :] + offsets[:, 1:] - margin)
  inside = (source_column >= 0) & (source_column < width)  # [batch, W]
  return pixels * tf.cast(inside, tf.uint8)[:, tf.newaxis, :, tf.newaxis]


def crop_offsets(batch_size, margin, seed):
  """int32 [batch_size, 2] crop offsets uniform in [0, 2 * margin]: a
  stateless draw from `seed` (int64 [2]), the same for the same seed."""
  return tf.random.stateless_uniform([batch_size, 2], seed=seed, minval=0,
                                     maxval=2 * margin + 1, dtype=tf.int32)


def normalise(images, dtype):
  """Model input from uint8 images: in [-1, 1] as preprocessing.preprocess
  computes it, cast to `dtype` (the compute dtype, model_fn/precision.py)."""
  return tf.cast(tf.cast(images, tf.float32) / 127.5 - 1.0, dtype)
