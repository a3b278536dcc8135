"""WarmStartSettings(var_name_to_vocab_info=...) on the facade's tf2 runner
(train_distribute=MirroredStrategy over 2 CPUs) and graph engine, against
TF 2.15's Estimator (golden/warm_start.json, `.venv/legacy/bin/python -m
tests.facade.regenerate warm_start`): the warm-started embedding (rows
remapped to the new vocabulary, OOV and new rows from the backup
initializer), the plainly warm-started kernel, and TF's error for a
VocabInfo of a variable not warm-started.
"""

import json
import os

import pytest

from tests import testutil
from tests.canned import compare
from tests.facade import regenerate

with open(os.path.join(regenerate.GOLDEN, 'warm_start.json')) as _f:
  GOLDEN = json.load(_f)

pytestmark = testutil.facade_lanes


@pytest.fixture(scope='module')
def fresh(tmp_path_factory):
  return regenerate.run('warm_start_program.py',
                        f'--work_dir={tmp_path_factory.mktemp("warm")}')


def test_golden_holds_the_remapped_rows():
  emb = GOLDEN['mirrored']['emb'][2]
  # New vocabulary c, a, d, b + 1 OOV over the old a, b, c rows [0 1] [2 3]
  # [4 5]: c, a and b from the checkpoint, d and the OOV row new (ones).
  assert emb == [[4., 5.], [0., 1.], [1., 1.], [2., 3.], [1., 1.]]
  assert 'not used' in GOLDEN['mirrored_unused_vocab']['error'][1]


@pytest.mark.parametrize('cell', sorted(GOLDEN))
def test_cell_matches_tf215(fresh, cell):
  diffs = compare.differences(GOLDEN[cell], fresh[cell])
  assert not diffs, '\n'.join(diffs[:25])
