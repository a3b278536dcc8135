"""tf.estimator's heads: losses, predictions, metrics and export outputs of a
model's logits (tensorflow_estimator.python.estimator.head)."""
