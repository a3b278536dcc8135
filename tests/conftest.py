"""pytest setup: the repo root on sys.path, quiet TF C++ logs."""

import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)

# On TF without tf.estimator, model code looks up tf.estimator.ModeKeys and
# TPUEstimatorSpec at import: provide the tf2 runner's stand-ins first.
from trainer.compat import estimator as estimator_compat  # pylint: disable=g-import-not-at-top
estimator_compat.install()
