"""The engines: what runs a model_fn / input_fn pair's train, evaluate,
predict and export, below every front end: graph/ (Estimator's own
execution model, a TF1 graph and a Session per call) and tf2/ (the same
model_fn under tf.distribute)."""
