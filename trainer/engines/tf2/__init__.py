"""The tf2 engine: an unmodified model_fn / input_fn under tf.distribute
(what --runner=tf2 runs, and the facade's calls under a strategy)."""
