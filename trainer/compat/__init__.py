"""Compatibility with TensorFlow versions: Estimator stand-ins and the one
module on private TF APIs."""
