"""The runners --runner names (registry.py, the one runner registry): the
real TPUEstimator (estimator/), the same model_fn under tf.distribute (the
tf2 engine, trainer/engines/tf2) and TF2-native models under Orbit
(native/)."""
