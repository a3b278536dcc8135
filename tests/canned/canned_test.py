"""The canned Estimators through the facade against the real ones (TF 2.15).

canned_cells.py's matrix (every Estimator family, v2 and v1, over the
feature-column kinds, with their heads) runs through the facade on this
lane (canned_program.py under `python -m trainer.legacy`) and is compared
with what the real Estimator of TF 2.15 recorded (golden/, written by
`.venv/legacy/bin/python -m tests.canned.regenerate`): from the same initial
values, the same checkpoint variables (names, dtypes, shapes, values), the
loss of every training step, evaluation metrics, predictions, summary tags,
and exported signatures with their outputs for serialized tf.Examples.

Checkpoints cross lanes both ways: the facade resumes TF 2.15's checkpoints
(restoring their exact values, then training on as TF 2.15 does), and, when
.venv/legacy is installed, TF 2.15 resumes the facade's.
"""

import json
import os
import sys

import pytest

from tests import testutil
from tests.canned import compare
from tests.canned import regenerate

GOLDEN = regenerate.GOLDEN
LEGACY_PYTHON = os.path.join(testutil.REPO_ROOT, '.venv', 'legacy', 'bin',
                             'python')
RTOL = compare.RTOL
# Metrics of cells the reference itself does not reproduce exactly (SDCA):
# it differs run to run by up to about 5%.
INEXACT_RTOL = 0.15
differences = compare.differences
comparable = compare.comparable
PARTS = ('variables', 'losses', 'metrics', 'predictions', 'summaries',
         'export')

pytestmark = pytest.mark.skipif(
    testutil.HAS_ESTIMATOR,
    reason='compares the facade (TF >= 2.16) with goldens of the real '
    'Estimator; this lane runs the real one')


def _golden(name):
  with open(os.path.join(GOLDEN, name)) as f:
    return json.load(f)


MATRIX = _golden('matrix.json')
RESUMED = _golden('resume.json')


def _run(tmp_path, *args, python=sys.executable):
  out = str(tmp_path / 'out.json')
  regenerate.run('canned_program.py', f'--out={out}',
                 f'--work_dir={tmp_path / "work"}', *args, python=python,
                 timeout=testutil.HANG_TIMEOUT)
  with open(out) as f:
    return json.load(f)


@pytest.fixture(scope='module')
def fresh(tmp_path_factory):
  """(records, work dir) of every cell through the facade."""
  tmp_path = tmp_path_factory.mktemp('fresh')
  return _run(tmp_path), tmp_path / 'work'


@pytest.fixture(scope='module')
def resumed(tmp_path_factory):
  """The roundtrip cells resumed through the facade from TF 2.15's
  checkpoints."""
  return _run(tmp_path_factory.mktemp('resume'), '--phase=resume',
              f'--from_dir={os.path.join(GOLDEN, "checkpoints")}',
              f'--cells={",".join(regenerate.CHECKED_IN)}')


def test_differences_and_comparable_can_fail():
  assert not differences({'a': [1.0, 'x']}, {'a': [1.0 + 1e-9, 'x']})
  assert differences({'a': 1.0}, {'a': 1.1}) == ['/a: 1.0 != 1.1']
  assert differences({'a': 1}, {'b': 1}) and differences([1, 2], [1])
  assert differences('x', 'y') and differences(True, 1)
  summaries = {'.': {'loss': [[1, 2.]], 'bias': [[1, 3.]]}}
  assert comparable('summaries', summaries) == {
      '.': {'loss': [[1, 2.]], 'bias': [[1, None]]}}
  assert comparable('losses', [1.]) == [1.]
  assert not differences({'a': 1.0}, {'a': 2.0}, rtol=None)
  assert differences({'a': 1.0}, {'a': 'x'}, rtol=None)
  assert differences({'a': 1.0}, {'a': 1.1}, rtol=INEXACT_RTOL) == []
  assert differences({'a': 1.0}, {'a': 1.3}, rtol=INEXACT_RTOL)


def test_goldens_cover_the_matrix():
  from tests.canned import canned_cells  # pylint: disable=g-import-not-at-top
  assert set(MATRIX) == set(canned_cells.cells('/nonexistent-unused'))
  assert set(RESUMED) == set(regenerate.ROUNDTRIP)
  for cell, record in MATRIX.items():
    assert 'error' not in record, cell
    assert len(record['losses']) == 6 and record['variables'], cell
    assert record['metrics']['global_step'] == 6, cell


def _tolerance(cell, part):
  from tests.canned import canned_cells  # pylint: disable=g-import-not-at-top
  if canned_cells.cells('/nonexistent-unused')[cell].exact:
    return RTOL
  return INEXACT_RTOL if part == 'metrics' else None


@pytest.mark.parametrize('part', PARTS)
@pytest.mark.parametrize('cell', sorted(MATRIX))
def test_cell_matches_tf215(fresh, cell, part):
  records, _ = fresh
  got = records[cell]
  assert 'error' not in got, got['error']
  if part not in MATRIX[cell]:
    assert part not in got
    return
  diffs = differences(comparable(part, MATRIX[cell][part]),
                      comparable(part, got[part]), rtol=_tolerance(cell, part))
  assert not diffs, '\n'.join(diffs[:25])


def _assert_resume_matches(cell, real, got):
  assert 'error' not in got, got.get('error')
  for part in ('restored',) + PARTS[:-1]:
    diffs = differences(comparable(part, real[part]),
                        comparable(part, got[part]),
                        rtol=_tolerance(cell, part))
    assert not diffs, f'{part}:\n' + '\n'.join(diffs[:25])


@pytest.mark.parametrize('cell', regenerate.CHECKED_IN)
def test_facade_resumes_tf215_checkpoint(resumed, cell):
  """The facade restores TF 2.15's checkpoint exactly and trains, evaluates
  and predicts from it as TF 2.15 does."""
  real = RESUMED[cell]
  assert real['metrics']['global_step'] == 12
  assert not differences(real['restored'], MATRIX[cell]['variables'])
  _assert_resume_matches(cell, real, resumed[cell])


@pytest.mark.skipif(not os.path.exists(LEGACY_PYTHON),
                    reason='needs .venv/legacy (TF 2.15) to resume on')
def test_tf215_resumes_facade_checkpoints(fresh, tmp_path):
  """TF 2.15's Estimator restores the facade's checkpoints and goes on as
  from its own."""
  _, work = fresh
  got = _run(tmp_path, '--phase=resume', f'--from_dir={work}',
             f'--cells={",".join(regenerate.ROUNDTRIP)}',
             python=LEGACY_PYTHON)
  for cell in regenerate.ROUNDTRIP:
    _assert_resume_matches(cell, RESUMED[cell], got[cell])
