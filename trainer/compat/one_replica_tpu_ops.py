"""--cpu_fallback: the TPU-only calls a program makes under its own use_tpu
flag behave as on a TPU of one core, or fail before training naming the
call and the flag (a run-time patch of TF).

Off a TPU, `cross_replica_sum` has no kernel (`No OpKernel was registered
to support Op 'CrossReplicaSum'`), so a program whose --use_tpu=True wraps
its optimizer in CrossShardOptimizer (tensorflow/tpu's mnist_tpu.py), or
sums across replicas itself, fails at its first step. With one replica
the sum over replicas is the value itself, and CrossShardOptimizer,
finding no shard count outside a TPU computation, already assumes one
shard. `install()` makes, outside a TPU computation (no
tpu_shard_context; inside one, a TPU found despite --cpu_fallback, every
call is left alone):
  * cross_replica_sum return its input unchanged;
  * all_to_all with split_count 1 and collective_permute with the pairs
    [(0, 0)] return their input unchanged (what they do on one core);
    other counts or pairs need several cores: they raise;
  * tf.compat.v1.tpu's rewrite, shard, replicate, batch_parallel,
    initialize_system and shutdown_system, which only a TPU can run (they
    failed at the first session.run with `No OpKernel`), raise when called,
    that is while the program builds its graph, before any step.
What they raise is a NotImplementedError whose message
`unsupported_call(error)` returns: the call, and the program's own
--use_tpu flag to change.
"""

import functools

import tensorflow as tf
from tensorflow.python.tpu import tpu_function  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.tpu.ops import tpu_ops  # pylint: disable=g-direct-tensorflow-import

_MARK = '_trainer_one_replica'
_ERROR_MARK = 'trainer.legacy --cpu_fallback: '
# Public calls that build or manage a TPU computation: no one-core meaning.
_TPU_ONLY = ('rewrite', 'shard', 'replicate', 'batch_parallel',
             'initialize_system', 'shutdown_system')


def _outside_tpu_computation():
  return tpu_function.get_tpu_context().number_of_shards is None


def _refusal(call, why):
  return NotImplementedError(
      f'{_ERROR_MARK}the program calls {call}, which {why}; with '
      '--cpu_fallback and no TPU it runs on the CPU as one TPU core. Run '
      'the program with its own --use_tpu=False (its flag for training '
      'without a TPU), or on a TPU.')


def unsupported_call(error):
  """The one-line message if `error` is a TPU-only call refused by
  install()'s patches, else None."""
  text = str(error)
  if isinstance(error, NotImplementedError) and text.startswith(_ERROR_MARK):
    return text[len(_ERROR_MARK):]
  return None


def _one_replica_sum(original):

  @functools.wraps(original)
  def cross_replica_sum(x, group_assignment=None, name=None):
    if _outside_tpu_computation():
      return tf.identity(x, name=name)
    return original(x, group_assignment, name)

  return cross_replica_sum


def _one_replica_all_to_all(original):

  @functools.wraps(original)
  def all_to_all(x, concat_dimension, split_dimension, split_count,
                 group_assignment=None, name=None):
    if _outside_tpu_computation():
      if split_count != 1:
        raise _refusal(f'all_to_all(split_count={split_count})',
                       'needs that many TPU cores')
      return tf.identity(x, name=name)
    return original(x, concat_dimension, split_dimension, split_count,
                    group_assignment, name)

  return all_to_all


def _one_replica_permute(original):

  @functools.wraps(original)
  def collective_permute(x, source_target_pairs, name=None):
    if _outside_tpu_computation():
      pairs = [tuple(int(i) for i in pair) for pair in source_target_pairs]
      if any(pair != (0, 0) for pair in pairs):
        raise _refusal(f'collective_permute(source_target_pairs={pairs})',
                       'moves data between several TPU cores')
      return tf.identity(x, name=name)
    return original(x, source_target_pairs, name)

  return collective_permute


def _refused_off_tpu(original, name):

  @functools.wraps(original)
  def refused(*args, **kwargs):
    if _outside_tpu_computation():
      raise _refusal(f'tf.compat.v1.tpu.{name}', 'only a TPU can run')
    return original(*args, **kwargs)

  return refused


def install():
  """Patches tpu_ops.cross_replica_sum (what CrossShardOptimizer calls),
  all_to_all and collective_permute there and in tf.compat.v1.tpu, and
  tf.compat.v1.tpu's TPU-only calls (see the module docstring).
  Idempotent; returns the patched cross_replica_sum."""
  original = tpu_ops.cross_replica_sum
  if getattr(original, _MARK, False):
    return original
  public = tf.compat.v1.tpu
  for name, make in (('cross_replica_sum', _one_replica_sum),
                     ('all_to_all', _one_replica_all_to_all),
                     ('collective_permute', _one_replica_permute)):
    real = getattr(tpu_ops, name)
    patched = make(real)
    setattr(patched, _MARK, True)
    setattr(tpu_ops, name, patched)
    if getattr(public, name, None) is real:
      setattr(public, name, patched)
  for name in _TPU_ONLY:
    real = getattr(public, name, None)
    if real is not None:
      setattr(public, name, _refused_off_tpu(real, name))
  return tpu_ops.cross_replica_sum
