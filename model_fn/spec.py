"""The one place model code gets the TPUEstimator contract's names from.

`TPUEstimatorSpec` and `ModeKeys` are looked up on `tf` at import time. On TF
versions without tf.estimator, the tf2 runner installs stand-ins for exactly
these names before model code is imported.
"""

import tensorflow as tf

TPUEstimatorSpec = tf.compat.v1.estimator.tpu.TPUEstimatorSpec
ModeKeys = tf.estimator.ModeKeys
