"""Random ops in a model_fn draw the same numbers under both runners.

TF1 seeds a random op that has no seed of its own with (graph seed, the
number of ops in the graph when it was made), so its numbers depend on every
op built before it, and the Estimator's graph (input pipeline, hooks) and a
traced tf.function differ there. Inside `derived_op_seeds()` the k-th random
op a model_fn call makes (dropout, drop-connect, `tf.random.*`) gets the
op seed crc32('random-op-k') instead, under the estimator and the tf2 runner
alike; its kernel then continues its stream step after step as in TF1, so
both runners draw the same numbers for the same op and step (without XLA,
which has its own generators).

`input_fn_op_seeds()` does the same for an input_fn (an unseeded
`shuffle`, random augmentation), so both runners read the same batches.

Left as TF makes them: ops with an explicit seed, everything when no graph
seed is set, and variable initializers (run once; eager under the tf2
runner, under `.../Initializer` in a graph), which do not count. On a
replica other than the first, `-replica-R` is appended so replicas draw
different numbers. Patches `random_seed.get_seed`, which every TF random op
consults; the patch is thread-local in effect (a per-thread counter) and
process-wide in presence, reference-counted like tf1_semantics.

`set_global_seed(seed)` is how the tf2 and native runners apply --seed: TF's
global seed, and Python's and NumPy's, which tf-keras initializers use.
"""

import contextlib
import threading
import zlib

import tensorflow as tf
# pylint: disable=g-direct-tensorflow-import
from tensorflow.python.eager import context
from tensorflow.python.framework import random_seed
# pylint: enable=g-direct-tensorflow-import

_ORIGINAL_GET_SEED = random_seed.get_seed
_MAX_SEED = 0x7FFFFFFF

_lock = threading.Lock()
_depth = 0
_local = threading.local()


def set_global_seed(seed):
  """Seeds TF's global seed and Python's and NumPy's random modules (tf-keras
  draws the seeds of unseeded initializers, as tf.keras layers in a model_fn
  make them, from Python's). None seeds nothing, as Estimator's
  tf_random_seed=None."""
  if seed is None:
    tf.random.set_seed(None)
  else:
    tf.keras.utils.set_random_seed(seed)


def _replica_id():
  """This replica's index when it is known at trace time, else 0."""
  replica = tf.distribute.get_replica_context()
  if replica is None:
    return 0
  value = tf.get_static_value(replica.replica_id_in_sync_group)
  return int(value) if value is not None else 0


def _get_seed(op_seed):
  counter = getattr(_local, 'counter', None)
  graph_seed, _ = _ORIGINAL_GET_SEED(None)
  if counter is None or op_seed is not None or graph_seed is None:
    return _ORIGINAL_GET_SEED(op_seed)
  namespace, eager = _local.kind
  scope = tf.compat.v1.get_default_graph().get_name_scope()
  if (context.executing_eagerly() and not eager) or (
      '/Initializer' in '/' + scope):
    return _ORIGINAL_GET_SEED(op_seed)
  counter[0] += 1
  key = f'{namespace}-{counter[0]}'
  replica = _replica_id()
  if replica:
    key += f'-replica-{replica}'
  return _ORIGINAL_GET_SEED(zlib.crc32(key.encode()) & _MAX_SEED)


@contextlib.contextmanager
def derived_op_seeds(namespace='random-op', eager=False):
  """Random ops made in this thread within the block get derived seeds
  crc32(f'{namespace}-{k}'); eager ones too if `eager` (an input_fn, which
  the tf2 runner calls eagerly and Estimator in a graph)."""
  global _depth
  outer = getattr(_local, 'counter', None), getattr(_local, 'kind', None)
  _local.counter = [0]
  _local.kind = (namespace, eager)
  with _lock:
    if _depth == 0:
      random_seed.get_seed = _get_seed
    _depth += 1
  try:
    yield
  finally:
    _local.counter, _local.kind = outer
    with _lock:
      _depth -= 1
      if _depth == 0:
        random_seed.get_seed = _ORIGINAL_GET_SEED


def input_fn_op_seeds():
  """derived_op_seeds() for an input_fn call: same data under both runners."""
  return derived_op_seeds('input-random-op', eager=True)
