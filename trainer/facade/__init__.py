"""The Estimator facade, laid out as tensorflow_estimator.python.estimator."""
