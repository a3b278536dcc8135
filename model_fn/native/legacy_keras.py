"""`keras`: tf.keras as Keras 2 (the tf-keras package) on every TF version.

From TF 2.16 on, `tf.keras` is Keras 3 unless TF_USE_LEGACY_KERAS is set
before `tf.keras` is first used. The native models, Orbit and
tf-models-official need Keras 2, so this module sets it (without overriding
an explicit value) and refuses to go on with Keras 3.
"""

import os

os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

keras = tf.keras
if keras.__name__.startswith('keras._tf_keras'):
  raise ImportError(
      'tf.keras is Keras 3 in this process: set TF_USE_LEGACY_KERAS=1 before '
      'anything uses tf.keras (the native models need Keras 2 from the '
      'tf-keras package).')
