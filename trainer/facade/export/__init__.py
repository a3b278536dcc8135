"""tf.estimator.export of the facade: input receivers and export outputs."""
