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


def test_jit_only_where_the_strategy_allows_it():
  assert strategy_lib.supports_jit('default')
  assert not strategy_lib.supports_jit('mirrored')
  assert not strategy_lib.supports_jit('multi_worker_mirrored')
