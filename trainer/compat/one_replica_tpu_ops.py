"""--cpu_fallback: the TPU collectives a program calls under its own
use_tpu flag behave as on a TPU of one core (a run-time patch of TF).

Off a TPU, `cross_replica_sum` has no kernel (`No OpKernel was registered
to support Op 'CrossReplicaSum'`), so a program whose --use_tpu=True wraps
its optimizer in CrossShardOptimizer (tensorflow/tpu's mnist_tpu.py), or
sums across replicas itself, fails at its first step. With one replica
the sum over replicas is the value itself, and CrossShardOptimizer,
finding no shard count outside a TPU computation, already assumes one
shard. `install()` makes cross_replica_sum return its input unchanged
when it is called outside a TPU computation (no tpu_shard_context), and
leaves it alone inside one (a TPU found despite --cpu_fallback).
"""

import functools

import tensorflow as tf
from tensorflow.python.tpu import tpu_function  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu.ops import tpu_ops  # pylint: disable=g-direct-tensorflow-import

_MARK = '_trainer_one_replica'


def _outside_tpu_computation():
  return tpu_function.get_tpu_context().number_of_shards is None


def install():
  """Patches tpu_ops.cross_replica_sum (what CrossShardOptimizer calls)
  and tf.compat.v1.tpu.cross_replica_sum (what programs call). Idempotent;
  returns the patched function."""
  original = tpu_ops.cross_replica_sum
  if getattr(original, _MARK, False):
    return original

  @functools.wraps(original)
  def cross_replica_sum(x, group_assignment=None, name=None):
    if _outside_tpu_computation():
      return tf.identity(x, name=name)
    return original(x, group_assignment, name)

  setattr(cross_replica_sum, _MARK, True)
  tpu_ops.cross_replica_sum = cross_replica_sum
  if getattr(tf.compat.v1.tpu, 'cross_replica_sum', None) is original:
    tf.compat.v1.tpu.cross_replica_sum = cross_replica_sum
  return cross_replica_sum
