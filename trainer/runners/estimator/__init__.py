"""The estimator runner: the real TPUEstimator and its session hooks."""
