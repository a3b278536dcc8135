"""The eval metric_fn of classifiers: run on the host over all shards' tensors."""

import tensorflow as tf

TOP_K = 5


def classification_metric_fn(labels, logits):
  """top_1_accuracy, and top_5_accuracy when there are more than 5 classes.

  Estimator adds the mean `loss` itself. Arguments are per-example tensors:
  labels [batch] int, logits [batch, classes] float32.
  """
  labels = tf.cast(labels, tf.int32)
  predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
  metrics = {
      'top_1_accuracy': tf.compat.v1.metrics.accuracy(labels, predictions),
  }
  if logits.shape[-1] > TOP_K:
    in_top_k = tf.cast(tf.nn.in_top_k(predictions=logits, targets=labels,
                                      k=TOP_K), tf.float32)
    metrics['top_5_accuracy'] = tf.compat.v1.metrics.mean(in_top_k)
  return metrics
