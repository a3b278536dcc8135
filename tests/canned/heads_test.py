"""tf.estimator's heads through the facade (TF >= 2.16) against the real
ones (TF 2.15): the same program (head_program.py: every head, with weights,
vocabularies, thresholds, per-class metrics, sparse labels, regularization,
Keras and v1 optimizers, MultiHead, and the v1 heads of the tf.compat.v1
canned Estimators) gives the same eager losses, predictions and metrics,
and under Estimator the same per-step losses, checkpoint variables,
evaluation metrics, predictions, summary tags and exported signatures (their
methods, inputs, output tensor names and dtypes, and outputs).

The real Estimator's records are recorded (tests/canned/golden/heads*.json,
written on TF 2.15 by `.venv/legacy/bin/python -m tests.canned.regenerate
--heads_only`, tagged with the sha256 of the head_program.py they come
from); the facade's run here. The in-process tests check what install()
publishes on the facade lanes.
"""

import json
import math
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from tests import testutil
from tests.canned import regenerate

PROGRAM = regenerate.HEAD_PROGRAM
CASES = ('binary', 'binary_vocabulary', 'multi_class',
         'multi_class_vocabulary', 'multi_label',
         'multi_label_sparse_vocabulary', 'regression', 'poisson', 'logistic',
         'multi_head')
# The v1 heads of the tf.compat.v1 canned Estimators (canned.head), which
# run in a TF1 graph only (no eager part).
V1_CASES = ('v1_binary', 'v1_multi_class_vocabulary', 'v1_regression',
            'v1_binary_or_multi_class')
PARTS = [(case, 'eager') for case in CASES] + [
    (case, 'estimator') for case in CASES + V1_CASES]
RTOL, ATOL = 1e-5, 1e-6

REPLICA_CASES = regenerate.HEAD_REPLICA_CASES


def _golden(name):
  """The real Estimator's records in golden/NAME, if still those of this
  head_program.py."""
  with open(os.path.join(regenerate.GOLDEN, name)) as f:
    golden = json.load(f)
  assert golden['head_program_sha256'] == regenerate.head_program_sha256(), (
      f'golden/{name} was recorded from another head_program.py: regenerate '
      'it (.venv/legacy/bin/python -m tests.canned.regenerate --heads_only)')
  return golden['records']


def _run(work_dir, *flags, name):
  """head_program.py's records through the facade on this lane."""
  out = os.path.join(work_dir, f'{name}.json')
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=testutil.REPO_ROOT)
  result = subprocess.run(
      [sys.executable, '-m', 'trainer.legacy', PROGRAM, f'--out={out}',
       f'--work_dir={os.path.join(work_dir, name)}'] + list(flags),
      cwd=testutil.REPO_ROOT, env=env, capture_output=True, text=True,
      timeout=testutil.HANG_TIMEOUT)
  assert result.returncode == 0, result.stderr[-3000:]
  with open(out) as f:
    return json.load(f)


@pytest.fixture(scope='module')
def records(tmp_path_factory):
  work_dir = str(tmp_path_factory.mktemp('heads'))
  return {'legacy': _golden('heads.json'),
          'modern': _run(work_dir, name='modern')}


@pytest.fixture(scope='module')
def replica_records(tmp_path_factory):
  """{lane: record} of REPLICA_CASES on 2 replicas. The facade runs one case
  per process: the tf2 runner's second MirroredStrategy in a process fails
  its collectives (shape mismatch), which is not the heads' concern."""
  work_dir = str(tmp_path_factory.mktemp('replicas'))
  records = {'legacy': _golden('heads_replicas.json'), 'modern': {}}
  for case in REPLICA_CASES:
    records['modern'].update(_run(work_dir, '--replicas=2', f'--cases={case}',
                                  name=f'modern_{case}'))
  return records


def _differences(real, facade, path=''):
  """Where two JSON records differ (numbers within RTOL/ATOL)."""
  if isinstance(real, dict) and isinstance(facade, dict):
    if set(real) != set(facade):
      return [f'{path}: keys {sorted(real)} != {sorted(facade)}']
    return [d for k in sorted(real)
            for d in _differences(real[k], facade[k], f'{path}/{k}')]
  if isinstance(real, list) and isinstance(facade, list):
    if len(real) != len(facade):
      return [f'{path}: {len(real)} items != {len(facade)}']
    return [d for i, (a, b) in enumerate(zip(real, facade))
            for d in _differences(a, b, f'{path}[{i}]')]
  numbers = (int, float)
  if (isinstance(real, numbers) and isinstance(facade, numbers) and
      not isinstance(real, bool) and not isinstance(facade, bool)):
    if math.isclose(real, facade, rel_tol=RTOL, abs_tol=ATOL):
      return []
  elif real == facade and type(real) is type(facade):
    return []
  return [f'{path}: {real!r} != {facade!r}']


def test_differences_finds_what_differs():
  assert not _differences({'a': [1.0, 'x']}, {'a': [1.0 + 1e-9, 'x']})
  assert _differences({'a': 1.0}, {'a': 1.1}) == ['/a: 1.0 != 1.1']
  assert _differences({'a': 1}, {'b': 1})
  assert _differences([1, 2], [1])
  assert _differences('x', 'y') and _differences(True, 1)


@testutil.facade_lanes
@pytest.mark.parametrize('case,part', PARTS)
def test_head_matches_tf215(records, case, part):
  real = records['legacy'][case][part]
  facade = records['modern'][case][part]
  # The record is not empty: what is compared was observed.
  if part == 'estimator':
    assert len(real['losses']) == 6 and real['metrics']['global_step'] == 6
    assert real['signatures']['serving_default']['outputs']
    assert real['predictions'] and real['variables']
  else:
    assert real['metrics'] and real['predictions']
  differences = _differences(real, facade)
  assert not differences, '\n'.join(differences[:30])


@testutil.facade_lanes
@pytest.mark.parametrize('case', REPLICA_CASES)
def test_head_on_two_replicas_matches_tf215(replica_records, case):
  real = dict(replica_records['legacy'][case]['estimator'])
  facade = dict(replica_records['modern'][case]['estimator'])
  assert len(real['losses']) == 6 and real['metrics']['global_step'] == 6
  # Not compared: the facade's tf2 runner adds its own 'loss' summary next
  # to the head's (an extra 'loss_1' tag) where Estimator adds none.
  assert set(real.pop('train_summaries')) <= set(
      facade.pop('train_summaries'))
  differences = _differences(real, facade)
  assert not differences, '\n'.join(differences[:30])


@pytest.mark.skipif(testutil.HAS_ESTIMATOR,
                    reason='TF 2.15: tf.estimator is the real one.')
def test_facade_publishes_the_heads_where_programs_look():
  from tensorflow_estimator.python.estimator.canned import metric_keys  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import prediction_keys  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.head import base_head  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.head import head_utils  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.head import multi_head  # pylint: disable=g-import-not-at-top
  from trainer.facade.head import binary_class_head  # pylint: disable=g-import-not-at-top
  assert tf.estimator.BinaryClassHead is binary_class_head.BinaryClassHead
  assert tf.compat.v1.estimator.MultiHead is multi_head.MultiHead
  for name in ('BinaryClassHead', 'MultiClassHead', 'MultiLabelHead',
               'RegressionHead', 'PoissonRegressionHead',
               'LogisticRegressionHead', 'MultiHead'):
    assert issubclass(getattr(tf.estimator, name), tf.estimator.Head), name
  assert tf.estimator.Head is base_head.Head
  assert metric_keys.MetricKeys.LOSS_MEAN == 'average_loss'
  assert prediction_keys.PredictionKeys.LOGISTIC == 'logistic'
  head = head_utils.binary_or_multi_class_head(
      4, weight_column=None, label_vocabulary=None,
      loss_reduction=tf.losses.Reduction.SUM)
  assert head.logits_dimension == 4 and head.loss_reduction == 'sum'


class _Doubled(tf.estimator.Head):
  """A user's head: delegates, implementing _create_tpu_estimator_spec only."""

  def __init__(self):
    self._head = tf.estimator.RegressionHead()

  name = property(lambda self: 'doubled')
  logits_dimension = property(lambda self: 1)
  loss_reduction = property(lambda self: self._head.loss_reduction)

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    return 2. * self._head.loss(labels, logits, features, mode)

  def predictions(self, logits, keys=None):
    return self._head.predictions(logits)

  def metrics(self, regularization_losses=None):
    return self._head.metrics()

  def update_metrics(self, eval_metrics, features, logits, labels, mode=None,
                     regularization_losses=None):
    return self._head.update_metrics(eval_metrics, features, logits, labels)

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, trainable_variables=None,
                                 train_op_fn=None, update_ops=None,
                                 regularization_losses=None):
    spec = self._head._create_tpu_estimator_spec(  # pylint: disable=protected-access
        features, mode, logits, labels, optimizer, trainable_variables,
        train_op_fn, update_ops, regularization_losses)
    if spec.loss is None:
      return spec
    return spec._replace(loss=2. * spec.loss)


def test_a_subclass_with_a_tpu_spec_gets_create_estimator_spec():
  """Head.create_estimator_spec() of a Head subclass that implements only
  _create_tpu_estimator_spec() is that spec as an EstimatorSpec (eval
  metrics called); without either, NotImplementedError."""
  with tf.Graph().as_default():
    spec = _Doubled().create_estimator_spec(
        features={'x': [[1.]]}, mode=tf.estimator.ModeKeys.EVAL,
        logits=[[2.], [4.]], labels=[[1.], [1.]])
    assert 'average_loss' in spec.eval_metric_ops
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.local_variables_initializer())
      session.run(spec.eval_metric_ops['average_loss'][1])
      loss, average = session.run(
          [spec.loss, spec.eval_metric_ops['average_loss'][0]])
  assert loss == pytest.approx(2. * (1. + 9.) / 2)
  assert average == pytest.approx((1. + 9.) / 2)

  class Bare(_Doubled):
    _create_tpu_estimator_spec = tf.estimator.Head._create_tpu_estimator_spec  # pylint: disable=protected-access

  with tf.Graph().as_default():
    with pytest.raises(NotImplementedError, match='must implement'):
      Bare().create_estimator_spec(
          features={}, mode=tf.estimator.ModeKeys.PREDICT, logits=[[1.]])
