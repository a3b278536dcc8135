"""trainer/runtime/strategy.py: which strategy and which task is the chief."""

import json

import pytest

from trainer.runtime import strategy as strategy_lib
from trainer.runtime import tf_config


def _config(cluster, kind, index):
  return json.dumps({'cluster': cluster, 'task': {'type': kind,
                                                  'index': index}})


def test_cluster_workers_counts_chief_and_workers():
  assert tf_config.cluster_workers('') == 0
  assert tf_config.cluster_workers(
      _config({'worker': ['a:1', 'b:2']}, 'worker', 1)) == 2
  assert tf_config.cluster_workers(
      _config({'chief': ['c:1'], 'worker': ['a:1']}, 'chief', 0)) == 2


def test_is_chief_task():
  two = {'worker': ['a:1', 'b:2']}
  assert tf_config.is_chief_task('')
  assert tf_config.is_chief_task(_config(two, 'worker', 0))
  assert not tf_config.is_chief_task(_config(two, 'worker', 1))
  with_chief = {'chief': ['c:1'], 'worker': ['a:1']}
  assert tf_config.is_chief_task(_config(with_chief, 'chief', 0))
  assert not tf_config.is_chief_task(_config(with_chief, 'worker', 0))
  assert tf_config.task_index(_config(two, 'worker', 1)) == 1


def test_bad_tf_config_names_it():
  with pytest.raises(ValueError, match='TF_CONFIG'):
    tf_config.cluster_workers('{not json')


def test_parameter_servers_and_evaluators_fail_before_any_strategy(
    monkeypatch):
  tfjob = {'chief': ['c:1'], 'worker': ['a:1', 'b:2'], 'ps': ['p:1'],
           'evaluator': ['e:1']}
  for kind, index in (('chief', 0), ('worker', 1), ('ps', 0),
                      ('evaluator', 0)):
    with pytest.raises(tf_config.UnsupportedClusterError,
                       match=r'1 "ps" task.*ParameterServerStrategy.*'
                       r'trainer\.legacy.*"chief"/"worker" tasks only'):
      tf_config.check_trainable_cluster(_config(tfjob, kind, index))
  no_ps = {'chief': ['c:1'], 'worker': ['a:1'], 'evaluator': ['e:1']}
  with pytest.raises(tf_config.UnsupportedClusterError,
                     match='a TF_CONFIG "evaluator" task: '):
    tf_config.check_trainable_cluster(_config(no_ps, 'evaluator', 0))
  tf_config.check_trainable_cluster('')  # No cluster: nothing to refuse.
  tf_config.check_trainable_cluster(_config(no_ps, 'worker', 0))
  # make_strategy refuses before making MultiWorkerMirroredStrategy, which
  # would wait for the ps tasks forever.
  monkeypatch.setenv('TF_CONFIG', _config(tfjob, 'worker', 0))
  with pytest.raises(tf_config.UnsupportedClusterError):
    strategy_lib.make_strategy({'use_tpu': False, 'peer_timeout_secs': 10,
                                'num_cpu_devices': 1})


def test_jit_only_where_the_strategy_allows_it():
  assert strategy_lib.supports_jit('default')
  assert not strategy_lib.supports_jit('mirrored')
  assert not strategy_lib.supports_jit('multi_worker_mirrored')
