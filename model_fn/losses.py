"""The classification loss shared by the TF1 model_fns and the native models."""

import tensorflow as tf


def cross_entropy(labels, logits, num_classes, label_smoothing=0.0):
  """Mean softmax cross-entropy in float32 with optional label smoothing."""
  onehot = tf.one_hot(tf.cast(labels, tf.int32), num_classes,
                      dtype=tf.float32)
  if label_smoothing:
    onehot = onehot * (1.0 - label_smoothing) + label_smoothing / num_classes
  return tf.reduce_mean(
      tf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits))
