"""Estimator.train under a RunConfig train_distribute strategy, in a TF1 graph.

What tf.estimator does with a strategy, for those the facade runs in a graph
as Estimator did (tf.compat.v1 ParameterServerStrategy, CentralStorageStrategy
v1 and v2, and MultiWorkerMirroredStrategy made in graph mode; the tf2
runner runs the others): one graph per call,
built inside strategy.scope() with the v1 optimizers' loss scaling on (they
divide the loss by the replica count); the input_fn is called through
strategy.make_input_fn_iterator (with an InputContext when it takes one)
and initialised when the session starts; global_step is made in the scope
and its read cached; the model_fn runs once per local replica
(call_for_each_replica) and the spec the session runs is combined from the
replicas': the loss reduced as Estimator reports it, the train ops grouped,
the first replica's hooks, one Scaffold. Training then runs as without a
strategy (train.train_with_spec), except under MultiWorkerMirroredStrategy,
where MonitoredTrainingSession itself checkpoints at the RunConfig cadence
(a non-chief worker into model_dir/tmp_worker_N, as TF's session decides)
and saving listeners are refused, as Estimator refuses them there.
"""

import tensorflow as tf

from trainer.api import specs
from trainer.compat import distribute_coordinator
from trainer.compat import tf_private
from trainer.engines.graph import inputs
from trainer.engines.graph import program as program_lib
from trainer.engines.graph import train as train_lib

_v1 = tf.compat.v1
ModeKeys = specs.ModeKeys
# Strategies whose Estimator training runs here, by class name (v1 and v2).
GRAPH_STRATEGIES = frozenset((
    'ParameterServerStrategyV1', 'CentralStorageStrategy',
    'CentralStorageStrategyV1', 'MultiWorkerMirroredStrategy',
    'CollectiveAllReduceStrategy', 'CollectiveAllReduceStrategyV1'))
_COLLECTIVE = frozenset(('MultiWorkerMirroredStrategy',
                         'CollectiveAllReduceStrategy',
                         'CollectiveAllReduceStrategyV1'))


def is_collective(strategy):
  return type(strategy).__name__ in _COLLECTIVE


def runs_in_graph(strategy):
  """Whether Estimator training under `strategy` runs here: a
  MultiWorkerMirroredStrategy only when made in graph mode (the program
  called tf.compat.v1.disable_eager_execution(), which Estimator required
  for it); made eagerly, it runs on the tf2 runner."""
  if is_collective(strategy):
    return not tf.executing_eagerly()
  return type(strategy).__name__ in GRAPH_STRATEGIES


class IteratorInitializerHook(_v1.train.SessionRunHook):
  """Initialises a strategy's input iterator when the session starts."""

  def __init__(self, iterator):
    self._iterator = iterator
    self._initializer = None

  def begin(self):
    self._initializer = self._iterator.initialize()

  def after_create_session(self, session, coord):
    del coord
    session.run(self._initializer)


def per_replica_ready_for_local_init_op(scaffold):
  """A Scaffold's ready_for_local_init_op inside a replica: its own, else
  the report of uninitialized global variables."""
  if scaffold.ready_for_local_init_op is not None:
    return scaffold.ready_for_local_init_op
  return _v1.train.Scaffold.get_or_default(
      'ready_for_local_init_op', _v1.GraphKeys.READY_FOR_LOCAL_INIT_OP,
      lambda: _v1.report_uninitialized_variables(_v1.global_variables()))


def combined_scaffold(grouped, strategy):
  """One Scaffold from the replicas' (their ops grouped, the first saver,
  init_fn and summary op; ready ops concatenated), as Estimator combines."""
  scaffolds = strategy.experimental_local_results(grouped)

  def grouped_ops(name):
    ops = [getattr(s, name) for s in scaffolds if getattr(s, name) is not None]
    return strategy.group(ops) if ops else None

  def concatenated(value):
    values = tf.nest.flatten(strategy.experimental_local_results(value))
    return values[0] if len(values) == 1 else tf.concat(values, 0)

  ready_op = strategy.extended.call_for_each_replica(
      lambda s: s.ready_op, args=(grouped,))
  ready_for_local_init_op = strategy.extended.call_for_each_replica(
      per_replica_ready_for_local_init_op, args=(grouped,))
  init_fns = [s._user_init_fn for s in scaffolds  # pylint: disable=protected-access
              if s._user_init_fn is not None]  # pylint: disable=protected-access
  savers = [s.saver for s in scaffolds if s.saver is not None]
  return _v1.train.Scaffold(
      init_op=grouped_ops('init_op'),
      ready_op=None if ready_op is None else concatenated(ready_op),
      ready_for_local_init_op=(None if ready_for_local_init_op is None else
                               concatenated(ready_for_local_init_op)),
      local_init_op=grouped_ops('local_init_op'),
      summary_op=grouped_ops('summary_op'),
      saver=savers[0] if savers else None,
      init_feed_dict=grouped_ops('init_feed_dict'),
      init_fn=init_fns[0] if init_fns else None)


def train(program, strategy, input_fn, hooks, saving_listeners):
  """Trains `program` under `strategy` (see the module docstring); returns
  the last step's loss (None if none ran)."""
  if is_collective(strategy) and saving_listeners:
    raise ValueError('Saving listenor is not supported by the current '
                     'Distribution Strategies.')
  graph = program_lib.new_graph(program)
  with tf_private.graph_mode(), graph.as_default(), strategy.scope(), (
      tf_private.estimator_loss_scaling(strategy)):
    _v1.random.set_random_seed(program.config.tf_random_seed)
    iterator = strategy.make_input_fn_iterator(
        lambda input_context: program.call_input_fn(
            input_fn, ModeKeys.TRAIN, input_context))
    worker_hooks = [IteratorInitializerHook(iterator)]
    global_step = program.create_global_step(graph)
    _v1.add_to_collection(tf_private.GLOBAL_STEP_READ_KEY,
                          strategy.extended.read_var(global_step))
    features, labels = inputs.split(iterator.get_next())
    grouped = strategy.extended.call_for_each_replica(
        program.call_model_fn, args=(features, labels, ModeKeys.TRAIN))
    loss = strategy.reduce(distribute_coordinator.loss_reduce_op(),
                           grouped.loss, axis=None)

    def first_replicas(hooks):
      return [strategy.experimental_local_results(h)[0] for h in hooks]

    spec = specs.EstimatorSpec(
        mode=grouped.mode, loss=loss,
        train_op=strategy.group(grouped.train_op),
        training_hooks=first_replicas(grouped.training_hooks),
        training_chief_hooks=first_replicas(grouped.training_chief_hooks),
        scaffold=combined_scaffold(grouped.scaffold, strategy))
    return train_lib.train_with_spec(
        program, spec, worker_hooks, list(hooks), global_step,
        list(saving_listeners),
        session_checkpoints=is_collective(strategy))
