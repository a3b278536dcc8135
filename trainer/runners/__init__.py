"""The runners of trainer.main (registry.py, the one runner registry): the
real TPUEstimator (estimator/), the same model_fn under tf.distribute
(tf2/) and TF2-native models under Orbit (native/)."""
