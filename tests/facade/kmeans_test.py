"""tf.compat.v1.estimator.experimental.KMeans through the facade against
TF 2.15's (tensorflow_estimator's canned/kmeans.py).

kmeans_program.py's cells (mini-batch and full-batch; random, kmeans++ and
given initial centers; squared-Euclidean and cosine distance; feature
columns; relative_tolerance stopping training early) run through the
facade and are compared with what TF 2.15 recorded (golden/kmeans.json,
`.venv/legacy/bin/python -m tests.facade.regenerate kmeans`): the
checkpoint's variables, every step's `loss/raw` and `loss` summaries,
cluster_centers(), score(), predict_cluster_index(), transform(),
evaluate(), predict() and the exported signatures' outputs. The values of
the mini-batch cells are not compared: TF's own clustering graph reads and
updates the centers unordered within a step (under TF 2.15 too, its
results change with what a step fetches); their variables, dtypes, shapes,
metrics, prediction keys and signatures are.
"""

import json
import os

import pytest
import tensorflow as tf

from tests import testutil
from tests.canned import compare
from tests.facade import regenerate

with open(os.path.join(regenerate.GOLDEN, 'kmeans.json')) as _f:
  GOLDEN = json.load(_f)

pytestmark = testutil.facade_lanes
# kmeans_program.MINI_BATCH (not imported: it defines absl flags).
MINI_BATCH = ('minibatch_random', 'minibatch_3_steps_per_iteration')


def _structure(value):
  """value with every number replaced by its type's name."""
  if isinstance(value, dict):
    return {k: _structure(v) for k, v in value.items()}
  if isinstance(value, list):
    return [_structure(v) for v in value]
  if isinstance(value, (int, float)) and not isinstance(value, bool):
    return type(value).__name__
  return value


@pytest.fixture(scope='module')
def fresh(tmp_path_factory):
  return regenerate.run('kmeans_program.py',
                        f'--work_dir={tmp_path_factory.mktemp("kmeans")}')


def test_goldens_hold_what_the_cells_promise(fresh):
  assert set(GOLDEN) == set(fresh)  # Every cell of the program.
  assert set(MINI_BATCH) < set(GOLDEN)
  for cell, record in GOLDEN.items():
    assert 'clusters' in record['variables'], cell
    assert set(record['export']) == {'all_distances', 'cluster_index',
                                     'serving_default'}, cell
    assert set(record['metrics']) == {'score', 'loss', 'global_step'}, cell
  # relative_tolerance stopped training before its 20 steps.
  assert GOLDEN['given_centers_tolerance']['metrics']['global_step'] < 20


@pytest.mark.parametrize('cell', sorted(GOLDEN))
def test_cell_matches_tf215(fresh, cell):
  got, real = fresh[cell], GOLDEN[cell]
  assert 'error' not in got, got['error']
  if cell in MINI_BATCH:
    got, real = _structure(got), _structure(real)
  diffs = compare.differences(real, got)
  assert not diffs, '\n'.join(diffs[:25])


def test_arguments_are_checked_as_tf215(tmp_path):
  kmeans = tf.compat.v1.estimator.experimental.KMeans
  with pytest.raises(ValueError, match="Unsupported initialization "
                     "algorithm 'kmeans_plus_plus_init'"):
    kmeans(2, model_dir=str(tmp_path), initial_clusters='kmeans_plus_plus_init')
  with pytest.raises(ValueError, match="Unsupported distance metric 'l1'"):
    kmeans(2, model_dir=str(tmp_path), distance_metric='l1')
  assert kmeans.CLUSTER_CENTERS_VAR_NAME == 'clusters'
  assert not hasattr(tf.estimator.experimental, 'KMeans')  # v1 only.
  from tensorflow_estimator.python.estimator.canned import kmeans as module  # pylint: disable=g-import-not-at-top
  assert module.KMeansClustering is kmeans
