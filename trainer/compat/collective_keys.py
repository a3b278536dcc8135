"""Collective keys of their own for each MirroredStrategy of a process.

TensorFlow (checked on 2.15, 2.20, 2.21) gives every MirroredStrategy object
the same collective group key for one set of devices (1 + the class's
`_collective_key_base`, 0 outside TF's tests) and counts instance keys per
object, from 100. In eager/tf.function a second MirroredStrategy's
all-reduces therefore reuse the first one's (group, instance) keys, and the
collective runtime, which remembers each instance's shape for the process,
aborts the first step whose shapes differ: 'Shape mismatch in the collective
instance 100' (plain Keras shows it too, tensorflow/tensorflow#62790).
Estimator runs MirroredStrategy in a Session, without collectives on CPU, and
never fails so: a second Estimator in the process must train.

`use_own_keys(strategy)` gives a MirroredStrategy a group key no other
strategy passed to it uses, by rebuilding its collective ops with a fresh
`_collective_key_base`, as TF's own tests do for each strategy they make
(tensorflow/python/distribute/strategy_combinations.py). Once per strategy
object, before its first trace; its instance keys then count within that
group alone.
"""

import itertools
import threading
import weakref

import tensorflow as tf
from tensorflow.python.distribute import mirrored_strategy  # pylint: disable=g-direct-tensorflow-import

# Group keys per strategy: a strategy gets one group per device set it
# reduces over, far fewer than this.
_KEYS_PER_STRATEGY = 1000
_bases = itertools.count(_KEYS_PER_STRATEGY, _KEYS_PER_STRATEGY)
_rekeyed = weakref.WeakSet()  # The MirroredExtended objects done.
_lock = threading.Lock()


def use_own_keys(strategy):
  """Gives `strategy`, if a local MirroredStrategy (tf.distribute or
  tf.compat.v1) of several devices in TF2 behaviour, collective keys no
  other strategy given here shares. Returns whether it changed them now."""
  extended = getattr(strategy, 'extended', None)
  if (not isinstance(extended, mirrored_strategy.MirroredExtended) or
      strategy.num_replicas_in_sync < 2 or
      not tf.compat.v1.executing_eagerly_outside_functions() or
      getattr(extended, '_is_multi_worker_training', False)):
    return False
  with _lock:
    if extended in _rekeyed:
      return False
    _rekeyed.add(extended)
    old = extended._collective_ops  # pylint: disable=protected-access
    extended._collective_key_base = next(_bases)  # pylint: disable=protected-access
    extended._collective_ops = (  # pylint: disable=protected-access
        extended._make_collective_ops_with_fallbacks())  # pylint: disable=protected-access
    # Unless the user gave cross_device_ops, they are the collective ops.
    if extended._cross_device_ops is old:  # pylint: disable=protected-access
      extended._cross_device_ops = extended._collective_ops  # pylint: disable=protected-access
  return True


def group_keys(strategy):
  """The collective group keys `strategy` uses ({} if none): for tests."""
  keys = getattr(getattr(strategy, 'extended', None), '_collective_keys',
                 None)
  return dict(getattr(keys, '_known_groups', {}))
