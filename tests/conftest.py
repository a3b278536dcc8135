"""pytest setup: the repo root on sys.path, quiet TF C++ logs."""

import logging
import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
# absl's first log call outside app.run runs logging.basicConfig(), which
# binds a root StreamHandler to the sys.stderr of that moment: one test's
# capture, closed when that test ends, so later tests lose their records
# (caplog sees none). With a root handler present absl configures nothing;
# pytest's own handlers still capture every record.
logging.getLogger().addHandler(logging.NullHandler())
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)

# On TF without tf.estimator, model code looks up tf.estimator.ModeKeys and
# TPUEstimatorSpec at import: provide the tf2 runner's stand-ins first.
from trainer.compat import estimator as estimator_compat  # pylint: disable=g-import-not-at-top
estimator_compat.install()
