"""Compatibility with TensorFlow versions: Estimator names (from the
trainer.legacy facade) and the modules on private TF APIs."""
