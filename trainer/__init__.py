"""tpu-trainer: TPUEstimator model_fns under TPUEstimator or tf.distribute.

Importing a trainer module changes nothing: entry points set up what they
need before TensorFlow is imported (trainer/runtime/startup.py) and install
the Estimator facade (trainer/facade) where TensorFlow lacks Estimator.
docs/layout.md lists the packages and their layers.
"""
