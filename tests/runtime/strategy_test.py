"""trainer/runtime/strategy.py: which strategy and which task is the chief."""

import json

import pytest

from trainer import config as config_lib
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


def test_a_ps_cluster_needs_a_chief_to_coordinate():
  tfjob = {'chief': ['c:1'], 'worker': ['a:1', 'b:2'], 'ps': ['p:1'],
           'evaluator': ['e:1']}
  for kind, index in (('chief', 0), ('worker', 1), ('ps', 0),
                      ('evaluator', 0)):
    config = _config(tfjob, kind, index)
    assert tf_config.has_ps(config) and tf_config.task_type(config) == kind
    tf_config.check_trainable_cluster(config)
  no_chief = {'worker': ['a:1', 'b:2'], 'ps': ['p:1']}
  with pytest.raises(tf_config.UnsupportedClusterError,
                     match=r'coordinator is the "chief" task.*trainer\.legacy'):
    tf_config.check_trainable_cluster(_config(no_chief, 'worker', 0))
  with pytest.raises(tf_config.UnsupportedClusterError,
                     match='--runner=native does not train .* "ps"'):
    tf_config.check_no_ps('native', _config(tfjob, 'chief', 0))
  tf_config.check_no_ps('native', _config({'worker': ['a:1']}, 'worker', 0))
  assert not tf_config.has_ps('') and tf_config.task_type('') is None


def test_jit_only_where_the_strategy_allows_it():
  assert strategy_lib.supports_jit('default')
  assert not strategy_lib.supports_jit('mirrored')
  assert not strategy_lib.supports_jit('multi_worker_mirrored')


def test_parameter_server_roles_and_step_shares(monkeypatch):
  from trainer.engines.tf2 import parameter_servers  # pylint: disable=g-import-not-at-top
  tfjob = {'chief': ['c:1'], 'worker': ['a:1', 'b:2'], 'ps': ['p:1'],
           'evaluator': ['e:1']}
  roles = {}
  for kind in ('chief', 'worker', 'ps', 'evaluator'):
    monkeypatch.setenv('TF_CONFIG', _config(tfjob, kind, 0))
    roles[kind] = parameter_servers.task_role()
  assert roles == {'chief': 'coordinator', 'worker': 'server',
                   'ps': 'server', 'evaluator': 'evaluator'}
  monkeypatch.setenv('TF_CONFIG', _config({'worker': ['a:1', 'b:2']},
                                          'worker', 0))
  assert parameter_servers.task_role() is None  # MultiWorkerMirrored.
  # The evaluator runs no server: the strategy's cluster leaves it out.
  monkeypatch.setenv('TF_CONFIG', _config(tfjob, 'chief', 0))
  spec = tf_config.training_cluster_resolver().cluster_spec().as_dict()
  assert sorted(spec) == ['chief', 'ps', 'worker']
  assert parameter_servers.split_steps(10, 2) == [5, 5]
  assert parameter_servers.split_steps(4, 3) == [2, 1, 1]
  assert parameter_servers.split_steps(1, 2) == [1]


def test_a_ps_cluster_task_on_one_cpu_asks_for_two_inter_op_threads(
    monkeypatch):
  # One inter-op thread deadlocks a TF2 ps cluster (tf_config's note); the
  # cluster test runs every task on one CPU (tf2_parameter_server_test).
  monkeypatch.delenv('TF_NUM_INTEROP_THREADS', raising=False)
  monkeypatch.setattr(tf_config.os, 'sched_getaffinity', lambda pid: {3})
  assert tf_config.ps_cluster_inter_op_threads() == 2
  config = tf_config.server_config()
  assert config.inter_op_parallelism_threads == 2
  monkeypatch.setattr(tf_config.os, 'sched_getaffinity', lambda pid: {0, 1})
  assert tf_config.ps_cluster_inter_op_threads() is None
  assert tf_config.server_config() is None
  monkeypatch.setattr(tf_config.os, 'sched_getaffinity', lambda pid: {3})
  monkeypatch.setenv('TF_NUM_INTEROP_THREADS', '1')  # The user's choice.
  assert tf_config.ps_cluster_inter_op_threads() is None


def test_per_replica_batches_split_once_naming_the_flag():
  config = config_lib.Config(train_batch_size=30, eval_batch_size=40)
  assert strategy_lib.per_replica_batches(config, 2, 'tf2 runner') == {
      'train': 15, 'eval': 20}
  with pytest.raises(ValueError, match=r'^--eval_batch_size=40 must be '
                     r'divisible by the 3 replicas of the native runner\.$'):
    strategy_lib.per_replica_batches(config, 3, 'native runner')
