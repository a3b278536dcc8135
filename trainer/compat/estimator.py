"""Estimator names for model code on TF without Estimator (thin re-exports).

The stand-ins live in trainer/legacy (the Estimator facade): install() puts
the whole facade at tf.estimator / tf.compat.v1.estimator where Estimator is
missing, so legacy model modules import and run unmodified under the tf2
runner; where Estimator exists it changes nothing.
"""

from trainer.legacy import install as _install
from trainer.legacy import specs as _specs

ModeKeys = _specs.ModeKeys
EstimatorSpec = _specs.EstimatorSpec
TPUEstimatorSpec = _specs.TPUEstimatorSpec
has_estimator = _install.has_estimator


def install():
  """Installs the facade where TF lacks Estimator; True if this call did.

  False where the real Estimator exists or the facade is in place already.
  Idempotent; call it before importing model code.
  """
  return _install.install()
