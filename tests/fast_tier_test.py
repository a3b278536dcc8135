"""The fast tier (tests/fast_tier.txt, `bash scripts/test.sh fast`) names
modules that exist, and its check refuses what leaves the process."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from tests import conftest

# The real source tree (under Bazel too, where this file is a symlink into
# runfiles that hold only this target's files).
SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def test_the_fast_tier_names_test_modules_that_exist():
  assert conftest.FAST_TIER
  missing = [m for m in conftest.FAST_TIER
             if not os.path.isfile(os.path.join(SOURCE_ROOT, m))]
  assert not missing, missing
  assert all(os.path.basename(m).endswith('_test.py')
             for m in conftest.FAST_TIER)


def test_this_module_is_in_the_fast_tier(request):
  assert request.node.get_closest_marker('fast') is not None


def test_a_subprocess_in_the_fast_tier_is_refused():
  before = subprocess.Popen.__init__, os.fork, tf.distribute.Server.__init__
  with conftest.in_process_only('tests/x_test.py::test_y'):
    with pytest.raises(RuntimeError, match=r'tests/x_test\.py::test_y .*'
                       r'started a subprocess: take its module out of '
                       r'tests/fast_tier\.txt'):
      subprocess.run([sys.executable, '-c', 'pass'], check=True)
    with pytest.raises(RuntimeError, match='started a fork'):
      os.fork()
    with pytest.raises(RuntimeError, match='tf.distribute.Server'):
      tf.distribute.Server.create_local_server()
    # conftest's own check of the checkout still runs git.
    assert conftest.untracked_files() is not None or not os.path.exists(
        os.path.join(conftest.REPO_ROOT, '.git'))
  # The block puts back what it replaced.
  assert (subprocess.Popen.__init__, os.fork,
          tf.distribute.Server.__init__) == before
