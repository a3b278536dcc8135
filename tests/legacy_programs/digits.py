"""Reads the embedded digits TFRecords the way the fixture programs' authors
would: raw 28x28 uint8 pixels in image/encoded, label in image/class/label."""

import os

import tensorflow.compat.v1 as tf


def _parse(serialized):
  features = tf.io.parse_single_example(serialized, {
      'image/encoded': tf.io.FixedLenFeature([], tf.string),
      'image/class/label': tf.io.FixedLenFeature([], tf.int64),
  })
  image = tf.io.decode_raw(features['image/encoded'], tf.uint8)
  image = tf.cast(tf.reshape(image, [784]), tf.float32) / 255.0
  return {'image': image}, tf.cast(features['image/class/label'], tf.int32)


def dataset(data_dir, split, batch_size, repeat, with_labels=True):
  """Batches of ({'image': [B, 784]}, labels [B]) in file order."""
  files = sorted(tf.io.gfile.glob(os.path.join(data_dir, split + '-*')))
  if not files:
    raise ValueError(f'no {split}-* files in {data_dir}')
  records = tf.data.TFRecordDataset(files)
  if repeat:
    records = records.repeat()
  batches = records.map(_parse).batch(batch_size, drop_remainder=True)
  if not with_labels:
    batches = batches.map(lambda features, labels: features)
  return batches
