"""input_fn of random images and labels, for benchmarks without files."""

import tensorflow as tf

from model_fn import precision


def input_fn(params):
  """An endless dataset of one fixed random batch (no host work per step).

  params: batch_size, image_size, image_channels, num_classes, precision.
  """
  size, channels = params['image_size'], params['image_channels']
  batch = params['batch_size']
  dtype = precision.compute_dtype(params)
  images = tf.random.stateless_uniform([batch, size, size, channels],
                                       seed=[1, 2], minval=-1.0, maxval=1.0)
  labels = tf.random.stateless_uniform([batch], seed=[3, 4], minval=0,
                                       maxval=params['num_classes'],
                                       dtype=tf.int32)
  dataset = tf.data.Dataset.from_tensors(({'image': tf.cast(images, dtype)},
                                          labels))
  return dataset.repeat().prefetch(tf.data.AUTOTUNE)
