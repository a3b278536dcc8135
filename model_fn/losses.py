"""The classification loss shared by the TF1 model_fns and the native models."""

import tensorflow as tf


def checked_labels(labels, num_classes):
  """`labels`, checked to be class ids 0..num_classes-1 (one_hot turns any
  other into an all-zero target: training would go on, learning nothing
  from them). The check's message names --num_classes; XLA (a TPU) drops
  the check, so TPU runs skip it."""
  message = (f'labels must be class ids 0..{num_classes - 1} '
             f'(--num_classes={num_classes})')
  checks = [tf.debugging.assert_less(labels, tf.cast(num_classes, labels.dtype),
                                     message=message),
            tf.debugging.assert_non_negative(labels, message=message)]
  with tf.control_dependencies([c for c in checks if c is not None]):
    return tf.identity(labels)


def cross_entropy(labels, logits, num_classes, label_smoothing=0.0):
  """Mean softmax cross-entropy in float32 with optional label smoothing."""
  onehot = tf.one_hot(tf.cast(labels, tf.int32), num_classes,
                      dtype=tf.float32)
  if label_smoothing:
    onehot = onehot * (1.0 - label_smoothing) + label_smoothing / num_classes
  return tf.reduce_mean(
      tf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits))
