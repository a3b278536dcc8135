"""The conformance matrix on a facade lane (TF >= 2.16): each cell through
the project vs the real Estimator's golden (tests/conformance/).

All cells run in one subprocess (python -m tests.conformance.run
--api=project: the installed facade; 2 logical CPUs); each test then judges
one cell: it matches the golden, or is refused before any step with its
named project error, or is a known gap (xfail, strict: it must still
differ). Not on TF 2.15: there programs run the real Estimator, which wrote
the goldens (trainer.legacy changes nothing), so the facade is not what a
user runs.
"""

import os

import pytest

from tests import testutil
from tests.conformance import cells as cells_lib
from tests.conformance import compare
from tests.conformance import migration_table
from tests.conformance import goldens

LANE = 'new'
@pytest.fixture(scope='module')
def results(tmp_path_factory):
  """{cell: observables} of every cell run through the project."""
  out = str(tmp_path_factory.mktemp('conformance') / 'project.json')
  return goldens.run_cells('project', out, timeout=testutil.HANG_TIMEOUT)


def _params():
  for cell in cells_lib.CELLS:
    kind, detail = cell.expectation(LANE)
    marks = []
    if kind == 'differs':
      marks.append(pytest.mark.xfail(strict=True, reason=f'open: {detail}'))
    yield pytest.param(cell, id=cell.name, marks=marks)


@testutil.facade_lanes
@pytest.mark.parametrize('cell', _params())
def test_cell(cell, results):
  golden = goldens.load(cell.name)
  assert golden is not None, f'no golden for {cell.name}: regenerate'
  got = results[cell.name]
  kind, detail = cell.expectation(LANE)
  if kind == 'refused':
    refusal = got.get('refusal') or {}
    assert got.get('error') == detail, (got.get('error'), refusal)
    assert refusal['trainer_error'], refusal
    assert refusal['steps_run'] == 0, refusal
    return
  if got.get('error') and not golden.get('error'):
    pytest.fail(f'{cell.name}: the project raised {got["error"]}: '
                f'{got["refusal"]["message"]}')
  diffs = compare.differences(golden, got)
  assert not diffs, f'{cell.name} differs from Estimator:\n' + '\n'.join(
      diffs[:15])


def test_every_cell_has_a_golden_and_no_golden_is_stale():
  names = {c.name for c in cells_lib.CELLS}
  stored = {f[:-len('.json')] for f in os.listdir(goldens.GOLDEN_DIR)}
  assert names == stored


def test_matrix_size_and_axes():
  assert len(cells_lib.CELLS) >= 60
  axes = {c.axis for c in cells_lib.CELLS}
  assert {'input_fn', 'spec', 'metrics', 'scaffold', 'ema', 'summaries',
          'hooks', 'modes', 'replicas', 'warm_start'} <= axes


def test_migration_md_table_is_generated_from_the_matrix():
  with open(migration_table.MIGRATION_MD) as f:
    text = f.read()
  assert migration_table.current(text) == migration_table.render(), (
      'MIGRATION.md is stale: python -m tests.conformance.migration_table')


def test_compare_tolerates_rounding_only():
  golden = {'a': [1.0, 2], 'b': {'tag': [[3, 0.5]]}, 'time': 1}
  assert not compare.differences(golden, {'a': [1.0 + 1e-7, 2],
                                          'b': {'tag': [[3, 0.5]]}, 'time': 9})
  assert compare.differences(golden, {'a': [1.001, 2],
                                      'b': {'tag': [[3, 0.5]]}})
  assert compare.differences(golden, {'a': [1.0, 3],
                                      'b': {'tag': [[4, 0.5]]}})
  assert compare.differences(golden, {'a': [1.0, 2], 'b': {}})
