"""Cluster misconfigurations that fail at once instead of hanging, in
process (no cluster is started): the same assertion on both lanes where
Estimator fails too; facade-only where Estimator would wait (said below).
"""

import json
import subprocess
import sys

import pytest
import tensorflow as tf

from scripts import local_cluster
from tests import testutil

_V1 = tf.compat.v1


def _model_fn(features, labels, mode):
  del labels
  weight = _V1.get_variable('w', [1])
  loss = tf.reduce_sum(features * weight)
  return tf.estimator.EstimatorSpec(
      mode, loss=loss, train_op=_V1.train.GradientDescentOptimizer(
          0.1).minimize(loss, _V1.train.get_global_step()))


def _input_fn():
  return tf.data.Dataset.from_tensors(tf.ones([1])).repeat()


def _set_tf_config(monkeypatch, cluster, task_type='chief'):
  monkeypatch.setenv('TF_CONFIG', json.dumps({
      'cluster': cluster, 'task': {'type': task_type, 'index': 0},
      'environment': 'cloud'}))


@pytest.mark.parametrize('with_evaluator,message', [
    (True, "'evaluator' job is not supported if you don't use "
     '`train_and_evaluate`'),
    (False, 'Only `STANDALONE_CLIENT` mode is supported when you call '
     '`estimator.train`')])
def test_train_outside_train_and_evaluate_with_a_cluster_strategy_fails(
    monkeypatch, tmp_path, with_evaluator, message):
  """As Estimator: a strategy on a TF_CONFIG cluster trains only through
  train_and_evaluate (the Distribute Coordinator)."""
  with testutil.closed_port() as port:
    cluster = {'chief': [f'127.0.0.1:{port}'], 'ps': [f'127.0.0.1:{port}']}
    if with_evaluator:
      cluster['evaluator'] = [f'127.0.0.1:{port}']
    _set_tf_config(monkeypatch, cluster)
    config = tf.estimator.RunConfig(
        train_distribute=_V1.distribute.experimental.ParameterServerStrategy())
    estimator = tf.estimator.Estimator(_model_fn, str(tmp_path), config)
    with pytest.raises(ValueError) as raised:
      estimator.train(_input_fn, steps=1)
  assert message in str(raised.value)


@pytest.mark.skipif(testutil.HAS_ESTIMATOR, reason='the real Estimator waits '
                    'session_creation_timeout_secs (2 h) for the server')
def test_train_on_a_cluster_task_without_its_server_fails_at_once(
    monkeypatch, tmp_path):
  from trainer.engines.graph import cluster as graph_cluster  # pylint: disable=g-import-not-at-top
  with testutil.closed_port() as port:
    _set_tf_config(monkeypatch, {'chief': [f'127.0.0.1:{port}'],
                                 'ps': [f'127.0.0.1:{port}']})
    estimator = tf.estimator.Estimator(_model_fn, str(tmp_path))
    with pytest.raises(graph_cluster.ServerError) as raised:
      estimator.train(_input_fn, steps=1)
  message = str(raised.value)
  assert f'no TensorFlow server listens at grpc://127.0.0.1:{port}' in message
  assert 'task chief:0' in message and 'train_and_evaluate' in message


def test_eager_multi_worker_mirrored_strategy_in_a_ps_cluster_is_refused(
    monkeypatch):
  """Estimator (TF 2.15, eager) hangs in this constructor, waiting for the
  ps tasks; the launcher installs this guard on such clusters."""
  from trainer.compat import collective_guard  # pylint: disable=g-import-not-at-top
  _set_tf_config(monkeypatch, {'chief': ['127.0.0.1:1'],
                               'worker': ['127.0.0.1:2'],
                               'ps': ['127.0.0.1:3']}, 'worker')
  from trainer.api import errors  # pylint: disable=g-import-not-at-top
  collective_guard.install(errors.CollectiveWithParameterServersError)
  try:
    with pytest.raises(errors.CollectiveWithParameterServersError,
                       match='disable_eager_execution'):
      tf.distribute.MultiWorkerMirroredStrategy()
  finally:
    collective_guard.uninstall()


@pytest.mark.skipif(testutil.HAS_ESTIMATOR, reason='the facade\'s check; '
                    'Estimator raises the same from its coordinator\'s copy')
def test_eager_multi_worker_mirrored_strategy_is_refused_before_training(
    monkeypatch):
  from trainer.facade import coordinator  # pylint: disable=g-import-not-at-top
  monkeypatch.delenv('TF_CONFIG', raising=False)
  with pytest.raises(ValueError, match='cannot be deep copied in eager mode'):
    coordinator._check_strategy(tf.distribute.MultiWorkerMirroredStrategy())  # pylint: disable=protected-access


_TASK = r'''
import json, os, sys, time
config = json.loads(os.environ['TF_CONFIG'])
print(os.environ['TF_CONFIG'], flush=True)
if config['task']['type'] == 'ps':
  time.sleep(600)  # Serves until stopped.
sys.exit(3 if config['task']['type'] == 'evaluator' else 0)
'''


def test_local_cluster_starts_every_task_with_tfjobs_tf_config(tmp_path):
  result = subprocess.run(
      [sys.executable, local_cluster.__file__, '--workers=2', '--ps=1',
       f'--logdir={tmp_path}', '--timeout_secs=60', '--',
       sys.executable, '-c', _TASK],
      capture_output=True, text=True, timeout=120)
  assert result.returncode == 1, result.stdout + result.stderr  # evaluator
  assert 'evaluator:0 exit 3' in result.stdout
  for name in ('chief-0', 'worker-0', 'worker-1', 'ps-0', 'evaluator-0'):
    config = json.loads((tmp_path / f'{name}.log').read_text().splitlines()[0])
    kind, index = name.split('-')
    assert config['task'] == {'type': kind, 'index': int(index)}
    assert config['environment'] == 'cloud'
    assert sorted(config['cluster']) == ['chief', 'evaluator', 'ps', 'worker']
    assert len(config['cluster']['worker']) == 2
  assert 'ps:0' not in result.stdout  # Not waited for: stopped at the end.
