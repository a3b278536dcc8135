"""tpu-trainer: TPUEstimator model_fns under TPUEstimator or tf.distribute."""

import importlib.util
import os
import sys

# Must run before TensorFlow's first import, which reads it once: on
# TF >= 2.16 it makes tf.keras and tf.compat.v1.layers the tf-keras package
# (Keras 2), which legacy model_fns need, instead of Keras 3. Harmless on
# TF 2.15, whose tf.keras is Keras 2 already. Left alone when TensorFlow is
# already imported, and without tf-keras installed (TF would then have no
# tf.keras at all).
if 'tensorflow' not in sys.modules and importlib.util.find_spec('tf_keras'):
  os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')
