"""params['context'] under the tf2 runner answers as TPUEstimator's TPUContext
(PER_HOST_V2) and as a tf.distribute.InputContext."""

import pytest
import tensorflow as tf

from input_fn import sharding
from tests import testutil
from trainer.engines.tf2 import input_context

HOST = '/job:worker/replica:0/task:1/device:CPU:0'


def _ours(num_hosts=2, host=1, replicas=8):
  return input_context.TPUInputContext(
      tf.distribute.InputContext(num_input_pipelines=num_hosts,
                                 input_pipeline_id=host,
                                 num_replicas_in_sync=replicas),
      host_device=HOST)


class _PerHostV2Topology:
  """What TPUContext asks of its internal context on 2 hosts x 4 cores."""
  num_hosts = 2
  num_replicas = 8
  num_of_replicas_per_host = 4
  model_parallelism_enabled = False

  def is_input_sharded_per_core(self):
    return False

  def is_input_broadcast_with_iterators(self):
    return False

  def is_replica_across_hosts(self):
    return False


@testutil.requires_estimator
def test_same_answers_as_tpuestimators_tpucontext():
  from tensorflow_estimator.python.estimator.tpu import tpu_context  # pylint: disable=g-import-not-at-top
  real = tpu_context.TPUContext(_PerHostV2Topology(), input_device=HOST,
                                invocation_index=1, call_from_input_fn=True,
                                host_id=1)
  ours = _ours()
  assert ours.current_input_fn_deployment() == (
      real.current_input_fn_deployment())
  for name in ('num_replicas', 'num_hosts', 'current_host',
               'num_of_replicas_per_host'):
    assert getattr(ours, name) == getattr(real, name), name
  assert ours.current_input_fn_deployment() == (HOST, 1, 2, 4)


def test_is_an_input_context_too():
  ours = _ours()
  assert isinstance(ours, tf.distribute.InputContext)
  assert (ours.num_input_pipelines, ours.input_pipeline_id) == (2, 1)
  assert ours.get_per_replica_batch_size(64) == 8


def test_device_assignment_is_for_model_fn_only():
  with pytest.raises(RuntimeError, match='must not be called from input_fn'):
    _ours().device_assignment  # pylint: disable=expression-not-assigned


@pytest.mark.parametrize('host', [0, 1])
def test_input_shard_reads_the_host_from_either_interface(host):
  context = _ours(host=host)
  assert sharding.input_shard({'context': context}) == (2, host)
  plain = tf.distribute.InputContext(2, host, 8)
  assert sharding.input_shard({'context': plain}) == (2, host)
