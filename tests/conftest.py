"""pytest setup: the repo root on sys.path, quiet TF C++ logs."""

import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)
