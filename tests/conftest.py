"""pytest setup: the repo root on sys.path, quiet TF C++ logs, no test may
leave a file in the checkout, and the fast tier stays in-process."""

import contextlib
import logging
import os
import subprocess
import sys

import pytest

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

# As every entry point does before TensorFlow's first import: Keras 2
# (tf-keras) for legacy model code on TF >= 2.16.
from trainer.runtime import startup  # pylint: disable=g-import-not-at-top
startup.select_keras()

# On TF without tf.estimator, model code looks up tf.estimator.ModeKeys and
# TPUEstimatorSpec at import: provide the tf2 runner's stand-ins first.
from trainer.facade import install as facade  # pylint: disable=g-import-not-at-top
facade.install()


# Bazel test sharding (shard_count in tests/BUILD): shard i of n runs every
# n-th test from the i-th, in collection order; a shard left without a test
# passes.
_SHARDS = int(os.environ.get('TEST_TOTAL_SHARDS', '1'))
_SHARD = int(os.environ.get('TEST_SHARD_INDEX', '0'))


# The modules with the most test time in CI (stop 39's modern lane, longest
# first) start first: pytest-xdist (--dist loadfile) hands out whole modules
# in collection order, so a long module collected last ran on one core
# while the other worker had finished. Order only: a stale list costs
# time, never a result.
_LONGEST_FIRST = (
    'tests/canned/canned_test.py', 'tests/migration_doc_test.py',
    'tests/migrate/migrate_test.py',
    'tests/faults/restart_test.py', 'tests/cluster/between_graph_test.py',
    'tests/bench_smoke_test.py', 'tests/conformance/conformance_test.py',
    'tests/main/verify_migration_test.py', 'tests/cluster/faults_test.py',
    'tests/model_fn/model_fn_test.py', 'tests/cluster/strategies_test.py',
    'tests/engines/tf2_engine_test.py', 'tests/memory/memory_test.py')


# The fast tier (`bash scripts/test.sh fast`, marker `fast`): the
# in-process tests a developer runs first, about a minute on the 2-core
# machine; tests/fast_tier.txt lists its modules. A test of them that starts
# a subprocess, forks, or starts a tf.distribute.Server fails, naming what
# it started (checked in every lane, so the tier stays in-process); the
# full lanes run these tests too.
FAST_TIER_FILE = os.path.join(REPO_ROOT, 'tests', 'fast_tier.txt')


def _fast_tier():
  """The test modules of tests/fast_tier.txt (repository-relative)."""
  with open(FAST_TIER_FILE, encoding='utf-8') as f:
    return tuple(line.strip() for line in f
                 if line.strip() and not line.startswith('#'))


FAST_TIER = _fast_tier()


def pytest_configure(config):
  config.addinivalue_line(
      'markers', 'fast: the fast tier (tests/fast_tier.txt): '
      'in-process only, no subprocess, no cluster')


_exempt = []  # Non-empty while conftest's own git check runs.


@contextlib.contextmanager
def in_process_only(test):
  """Within the block, starting a subprocess, forking or starting a
  tf.distribute.Server raises RuntimeError naming `test` and what it
  started (conftest's own checkout check excepted)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # numpy.testing runs `lscpu` once, at its first import (its SVE check),
  # which tf.test and assert_allclose make: import it before refusing.
  import numpy.testing  # pylint: disable=g-import-not-at-top,unused-import

  def refuse(what, original):
    def refused(*args, **kwargs):
      if _exempt:
        return original(*args, **kwargs)
      raise RuntimeError(
          f'{test} is in the fast tier, which runs in-process, and started '
          f'{what}: take its module out of tests/fast_tier.txt.')
    return refused

  patched = [(subprocess.Popen, '__init__', 'a subprocess'),
             (os, 'fork', 'a fork'),
             (tf.distribute.Server, '__init__', 'a tf.distribute.Server')]
  saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]
  for (owner, name, what), (_, _, original) in zip(patched, saved):
    setattr(owner, name, refuse(what, original))
  try:
    yield
  finally:
    for owner, name, original in saved:
      setattr(owner, name, original)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
  del nextitem
  if item.get_closest_marker('fast') is None:
    yield
    return
  with in_process_only(item.nodeid):
    yield


def _start_rank(item):
  module = item.nodeid.split('::', 1)[0]
  if module in _LONGEST_FIRST:
    return _LONGEST_FIRST.index(module)
  return len(_LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
  for item in items:
    if item.nodeid.split('::', 1)[0] in FAST_TIER:
      item.add_marker(pytest.mark.fast)
  items.sort(key=_start_rank)  # Stable: each module's own order is kept.
  if _SHARDS <= 1:
    return
  status_file = os.environ.get('TEST_SHARD_STATUS_FILE')
  if status_file:  # Tells Bazel this test runner shards.
    open(status_file, 'w').close()
  kept = [item for i, item in enumerate(items) if i % _SHARDS == _SHARD]
  config.hook.pytest_deselected(items=[i for i in items if i not in kept])
  items[:] = kept


def pytest_sessionfinish(session, exitstatus):
  if _SHARDS > 1 and exitstatus == 5:  # pytest.ExitCode.NO_TESTS_COLLECTED
    session.exitstatus = 0


def untracked_files(root=REPO_ROOT):
  """The files of checkout `root` that git neither tracks nor ignores; None
  outside a git checkout (Bazel's runfiles) or without git."""
  if not os.path.exists(os.path.join(root, '.git')):
    return None
  _exempt.append(True)  # A check of this conftest's, also in the fast tier.
  try:
    listed = subprocess.run(
        ['git', '-C', root, 'ls-files', '--others', '--exclude-standard',
         '-z'], capture_output=True, check=True, timeout=60).stdout
  except (OSError, subprocess.SubprocessError):
    return None
  finally:
    _exempt.pop()
  return set(filter(None, listed.decode('utf-8', 'replace').split('\0')))


_seen_files = []  # [the untracked files after the last test of this process]


@pytest.fixture(autouse=True)
def _no_new_files_in_the_checkout():
  """Fails (in its teardown) a test that leaves a new file in the checkout,
  naming it: tests write under tmp_path. A file already there when the
  session started is not blamed on any test."""
  if not _seen_files:
    _seen_files.append(untracked_files())
  yield
  if _seen_files[0] is None:
    return
  now = untracked_files() or set()
  new = sorted(now - _seen_files[0])
  _seen_files[0] = now
  if new:
    pytest.fail(f'the test left new files in the checkout {REPO_ROOT}: '
                f'{new}; write them under tmp_path.', pytrace=False)

