"""tf.compat.v1.estimator.inputs of the facade: numpy_input_fn and
pandas_input_fn."""
