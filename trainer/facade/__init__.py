"""The Estimator facade: tf.estimator / tf.compat.v1.estimator on TensorFlow
without Estimator, laid out as tensorflow_estimator (estimator, run_config,
training, exporter, tpu/, export/, hooks/, inputs/, ...) and published under
its names by install.py; engine/ runs the calls."""
