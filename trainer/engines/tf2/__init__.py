"""The tf2 runner: an unmodified model_fn / input_fn under tf.distribute."""
