"""tf.estimator hooks of the facade: TF core's SessionRunHooks, the
in-memory evaluator and the fake summary writer."""
