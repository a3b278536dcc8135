"""tf.compat.v1.estimator.tpu of the facade: TPUEstimator, its RunConfig and
TPUConfig, their helpers and the TPU inference API."""
