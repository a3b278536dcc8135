"""trainer/compat/collective_keys.py: two MirroredStrategy objects of one
process all-reduce values of different shapes once each has keys of its own.

Each case runs in a new process on 2 logical CPUs (a failed collective
aborts the process's collective executor, and the CPU split is fixed once
TF starts).
"""

import pytest
import tensorflow as tf

from tests import testutil
from trainer.compat import collective_keys


def _all_reduce_with_new_strategies(own_keys):
  """A new MirroredStrategy over 2 CPUs all-reduces a vector of 3, then
  another one a vector of 7; with `own_keys`, each has keys of its own."""
  strategies = []
  for size in (3, 7):
    strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
    if own_keys:
      assert collective_keys.use_own_keys(strategy)
      assert not collective_keys.use_own_keys(strategy)  # Once.
    strategies.append(strategy)

    @tf.function
    def step(strategy=strategy, size=size):
      def replica():
        context = tf.distribute.get_replica_context()
        return context.all_reduce('sum', tf.ones([size]))
      return strategy.run(replica)

    for value in strategy.experimental_local_results(step()):
      assert value.numpy().tolist() == [2.0] * size
  first, second = (set(collective_keys.group_keys(s).values())
                   for s in strategies)
  assert first and second and not first & second


def _fails_on_reused_keys():
  with pytest.raises(tf.errors.InvalidArgumentError,
                     match='Shape mismatch in the collective instance'):
    _all_reduce_with_new_strategies(own_keys=False)


def test_tensorflow_reuses_keys_across_strategies():
  # What use_own_keys works around (TF 2.15 to 2.21): if this starts to
  # fail, TensorFlow keeps the strategies apart itself.
  testutil.call_on_cpu_devices(2, _fails_on_reused_keys)


def test_strategies_with_own_keys_reduce_any_shapes():
  testutil.call_on_cpu_devices(2, _all_reduce_with_new_strategies, True)


def test_only_mirrored_strategies_of_several_devices_change():
  assert not collective_keys.use_own_keys(tf.distribute.get_strategy())
  one_device = tf.distribute.MirroredStrategy(['/cpu:0'])
  before = collective_keys.group_keys(one_device)
  assert not collective_keys.use_own_keys(one_device)
  assert collective_keys.group_keys(one_device) == before
