"""tpu-trainer: TPUEstimator model_fns under TPUEstimator or tf.distribute.

Importing a trainer module changes nothing: entry points set up what they
need before TensorFlow is imported (trainer/startup.py) and install the
Estimator facade where TensorFlow lacks Estimator (trainer/legacy).
"""
