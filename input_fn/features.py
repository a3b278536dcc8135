"""The TFRecord format: tf.train.Example with ImageNet-style feature keys.

image/encoded      bytes   JPEG/PNG bytes, or raw uint8 pixels (HWC order)
image/format       bytes   b'jpeg', b'png' or b'raw'
image/height       int64
image/width        int64
image/channels     int64
image/class/label  int64   0-based class id
"""

import tensorflow as tf

ENCODED = 'image/encoded'
FORMAT = 'image/format'
HEIGHT = 'image/height'
WIDTH = 'image/width'
CHANNELS = 'image/channels'
LABEL = 'image/class/label'

RAW = b'raw'
ENCODED_FORMATS = (b'jpeg', b'png')

TRAIN_PREFIX = 'train'
EVAL_PREFIX = 'validation'

FEATURE_SPEC = {
    ENCODED: tf.io.FixedLenFeature([], tf.string),
    FORMAT: tf.io.FixedLenFeature([], tf.string, default_value='jpeg'),
    HEIGHT: tf.io.FixedLenFeature([], tf.int64, default_value=0),
    WIDTH: tf.io.FixedLenFeature([], tf.int64, default_value=0),
    CHANNELS: tf.io.FixedLenFeature([], tf.int64, default_value=0),
    LABEL: tf.io.FixedLenFeature([], tf.int64),
}


def _bytes(value):
  return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int64(value):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))


def make_example(encoded, image_format, label, height, width, channels):
  """A serialized tf.train.Example in this format."""
  if image_format not in (RAW,) + ENCODED_FORMATS:
    raise ValueError(f'image_format must be one of raw, jpeg, png; got '
                     f'{image_format!r}.')
  example = tf.train.Example(features=tf.train.Features(feature={
      ENCODED: _bytes(encoded),
      FORMAT: _bytes(image_format),
      HEIGHT: _int64(height),
      WIDTH: _int64(width),
      CHANNELS: _int64(channels),
      LABEL: _int64(label),
  }))
  return example.SerializeToString()


def file_pattern(data_dir, is_training):
  """Glob of the split's files: DATA_DIR/train-* or DATA_DIR/validation-*."""
  prefix = TRAIN_PREFIX if is_training else EVAL_PREFIX
  return f"{data_dir.rstrip('/')}/{prefix}-*"
