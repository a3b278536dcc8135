"""The Estimator facade: tf.estimator / tf.compat.v1.estimator on TensorFlow
without Estimator, laid out as tensorflow_estimator (estimator, run_config,
training, exporter, tpu/, export/, hooks/, inputs/, ...) and published under
its names by install.py. The engines below it (trainer/engines) run the
calls: estimator.py chooses one per call; distributed/ maps those under
tf.distribute onto the tf2 engine."""
