"""Every module and name of tensorflow_estimator 2.15, as the facade
publishes them (trainer/facade/inventory.json, gaps.py, stand_ins.py).

On the legacy lane the inventory is regenerated from the installed
reference and must equal the checked-in file. On the facade's lanes every
module path imports, every name is the facade's own (same kind, signature,
class members, identities and constant values as on TF 2.15) or a
stand-in of exactly one gap that raises naming it and the alternative, and
every TF API path (tf.estimator, tf.compat.vN[.compat.vM].estimator, ...)
holds the same objects as its tensorflow_estimator module. A name neither
provided nor covered by a gap fails here: a new gap needs its table row.
"""

import collections
import fnmatch
import functools
import importlib
import inspect
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from tests import testutil
from trainer.facade import gaps
from trainer.facade import inventory

_E = 'tensorflow_estimator.python.estimator'
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@functools.lru_cache(maxsize=None)
def _checked():
  from tests.facade import inventory_check  # pylint: disable=g-import-not-at-top
  return tuple(inventory_check.check_all())


def _report(entries, limit=60):
  lines = [f'{e.key} [{e.status}]: {"; ".join(e.problems) or "missing"}'
           for e in entries]
  more = f'\n... and {len(lines) - limit} more' if len(lines) > limit else ''
  return '\n'.join(lines[:limit]) + more


@testutil.requires_estimator
def test_inventory_is_the_installed_reference():
  # In a fresh interpreter: the reference's classes gain attributes once
  # used (TPUEstimatorSpec._host_calls after a TPU program ran), and other
  # tests of this worker may have run one.
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.estimator_inventory', '--check'],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
  assert result.returncode == 0, (
      'trainer/facade/inventory.json is not what the installed reference '
      'gives: run .venv/legacy/bin/python -m scripts.estimator_inventory\n'
      + result.stdout + result.stderr[-2000:])


def test_inventory_covers_every_module_of_the_reference():
  data = inventory.load()
  modules = data['modules']
  assert data['reference'] == {'tensorflow': '2.15.1',
                               'tensorflow_estimator': '2.15.0'}
  # The packages and TF's shims, as walked on TF 2.15.
  for path in ('tensorflow_estimator', f'{_E}.estimator', f'{_E}.tpu.tpu_estimator',
               f'{_E}.canned.timeseries.ar_model', f'{_E}.api._v1.estimator',
               'tensorflow_estimator._api.v2.estimator.export',
               'tensorflow.python.estimator.estimator',
               'tensorflow.python.estimator.inputs.queues.feeding_functions',
               'tensorflow.python.tpu.tpu_estimator',
               'tensorflow.python.tpu.tpu_context'):
    assert path in modules, path
  assert modules['tensorflow.python.tpu.tpu_config']['mirror_of'] == (
      f'{_E}.tpu.tpu_config')
  estimator = inventory.names(data, f'{_E}.estimator')
  assert estimator['maybe_overwrite_model_dir_and_session_config'] == {
      'kind': 'function', 'signature': ['config', 'model_dir']}
  methods = estimator['Estimator']['methods']
  assert methods['_call_model_fn']['signature'] == [
      'self', 'features', 'labels', 'mode', 'config']
  # The standard library's and TF's modules are left out (EXCLUDED).
  assert 'six' not in estimator and 'tf' not in estimator
  assert 'absolute_import' not in estimator


# -- the facade's lanes -------------------------------------------------------

@testutil.facade_lanes
def test_every_reference_module_imports():
  data = inventory.load()
  for path, module in sorted(data['modules'].items()):
    imported = importlib.import_module(path)
    assert hasattr(imported, '__path__') == module['package'], path


@testutil.facade_lanes
def test_every_reference_name_is_provided_or_refused_as_its_gap_says():
  entries = _checked()
  wrong = [e for e in entries if e.status == 'missing' or e.problems]
  assert not wrong, (
      f'{len(wrong)} names of tensorflow_estimator 2.15 are missing or differ '
      'under the facade (provide them, or add a gap to '
      f'trainer/facade/gaps.py):\n{_report(wrong)}')
  statuses = collections.Counter(e.status for e in entries)
  assert statuses['provided'] > 1500 and statuses['refused'] > 0, statuses


def _missing_members():
  """'path:Class.member' of every member a provided class lacks."""
  found = []
  for entry in _checked():
    if entry.status != 'provided' or 'methods' not in entry.record:
      continue
    cls = getattr(importlib.import_module(entry.path), entry.name)
    for member in entry.record['methods']:
      try:
        inspect.getattr_static(cls, member)
      except AttributeError:
        found.append(f'{entry.path}:{entry.name}.{member}')
  return found


@testutil.facade_lanes
def test_gap_table_is_exact():
  """Each refused name (and each missing class member) is covered by
  exactly one gap; no gap covers a provided name or nothing at all; a gap
  covers a whole module only where the facade provides no class or
  function of it."""
  data = inventory.load()
  refused, provided = [], []
  for entry in _checked():
    key = f'{gaps.canonical(data, entry.path)}:{entry.name}'
    if 'same_as' in entry.record or 'value' in entry.record or (
        entry.record['kind'] == 'module'):
      continue  # Covered or provided where it is defined; values are given.
    (refused if entry.status == 'refused' else provided).append(key)
  covered = refused + _missing_members()
  for key in covered:
    matching = [g for g in gaps.GAPS
                if any(fnmatch.fnmatchcase(key, p) for p in g.names)]
    assert len(matching) == 1, (key, [g.why[:40] for g in matching])
  for key in provided:
    assert not any(fnmatch.fnmatchcase(key, p) for g in gaps.GAPS
                   for p in g.names), f'{key} is provided, yet in a gap'
  for gap in gaps.GAPS:
    for pattern in gap.names:
      if pattern.endswith('.*:*'):
        continue  # Submodules of a whole module, when it has any.
      # A whole module covers its submodules' names too.
      patterns = ((pattern, pattern[:-2] + '.*:*') if pattern.endswith(':*')
                  else (pattern,))
      assert any(fnmatch.fnmatchcase(k, p) for k in covered
                 for p in patterns), f'stale gap pattern {pattern}'
      if pattern.endswith(':*'):
        module = pattern[:-2]
        assert not [k for k in provided if k.startswith(module + ':')], (
            module)


def _attribute(path):
  """The object at a TF API attribute path ('tf.compat.v1.estimator')."""
  root, *parts = path.split('.')
  value = tf if root == 'tf' else importlib.import_module(root)
  for part in parts:
    value = getattr(value, part)
  return value


@testutil.facade_lanes
def test_api_paths_hold_their_modules_objects():
  """tf.estimator, tf.compat.v1.estimator, tf.compat.v2.estimator, the
  nested tf.compat.vN.compat.vM.estimator, their submodules and
  tensorflow_estimator.estimator: the objects of the tensorflow_estimator
  API module they are on TF 2.15 (importable where TF 2.15's are)."""
  data = inventory.load()
  for alias, module_path in sorted(data['aliases'].items()):
    published = _attribute(alias)
    module = importlib.import_module(module_path)
    for name in inventory.names(data, module_path):
      assert getattr(published, name) is getattr(module, name), (alias, name)
  for alias in data['importable']:
    imported = importlib.import_module('tensorflow' + alias[len('tf'):])
    assert imported is _attribute(alias), alias


@testutil.facade_lanes
@pytest.mark.parametrize('outer', ['v1', 'v2'])
@pytest.mark.parametrize('inner', ['v1', 'v2'])
def test_nested_compat_modules_have_estimator(outer, inner):
  """Issue 44's first failure: TF 2.15 has `estimator` on all four nested
  tf.compat.vN.compat.vM modules; so does the facade, the same API."""
  nested = getattr(getattr(tf.compat, outer).compat, inner)
  expected = tf.compat.v1.estimator if inner == 'v1' else tf.estimator
  assert nested.estimator is expected
  assert nested.estimator.Estimator is expected.Estimator
  assert hasattr(nested.estimator, 'tpu') == (inner == 'v1')


@testutil.facade_lanes
def test_a_refused_name_imports_and_fails_when_used_naming_the_alternative():
  from tensorflow_estimator.python.estimator.tpu.tpu_estimator import _InputPipeline  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned.timeseries import estimators  # pylint: disable=g-import-not-at-top
  from trainer.facade import unsupported  # pylint: disable=g-import-not-at-top

  class Subclass(_InputPipeline):  # A library may subclass it at import.
    pass

  with pytest.raises(unsupported.UnsupportedApiError,
                     match=r'tpu_estimator\._InputPipeline is not supported.*'
                     r'Instead: use TPUEstimator itself'):
    Subclass(None, None, None)
  assert list(inspect.signature(estimators.TimeSeriesRegressor).parameters)[
      :2] == ['model', 'state_manager']
  with pytest.raises(unsupported.UnsupportedApiError,
                     match='TimeSeriesRegressor.*tfp.sts'):
    estimators.TimeSeriesRegressor(model=None)
  # Provided since issue 42: KMeans at its public and its module's path.
  from tensorflow_estimator.python.estimator.canned import kmeans  # pylint: disable=g-import-not-at-top
  assert (tf.compat.v1.estimator.experimental.KMeans is
          kmeans.KMeansClustering)
  with pytest.raises(AttributeError, match='NoSuchName'):
    estimators.NoSuchName  # pylint: disable=pointless-statement


@testutil.facade_lanes
def test_migration_doc_has_the_generated_tables():
  from tests.facade import migration_tables  # pylint: disable=g-import-not-at-top
  with open(migration_tables.DOC, encoding='utf-8') as f:
    section = migration_tables.section(f.read())
  assert section == migration_tables.render(), (
      'MIGRATION.md\'s estimator-inventory tables are stale: run python -m '
      'tests.facade.migration_tables on a facade lane')
