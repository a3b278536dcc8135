"""train_and_evaluate with a strategy on a TF_CONFIG cluster, as Estimator.

With RunConfig(train_distribute=STRATEGY) and a TF_CONFIG cluster without a
master, tf.estimator runs train_and_evaluate through TF's Distribute
Coordinator in INDEPENDENT_WORKER mode, and so does the facade (the same
coordinator, trainer/compat/distribute_coordinator.py): every task but the
evaluator starts its server (its cluster without the evaluator); a ps task
serves until stopped; the chief and each worker train a copy of the
Estimator whose RunConfig has the task's own settings (task_type, task_id,
master, is_chief, ...) and a copy of the strategy configured for the task,
with TrainSpec's hooks but not its saving listeners and without a start-up
delay, on the graph engine (graph/distributed_train.py); the evaluator
evaluates each new checkpoint and exports, with eval_distribute. No task
returns a result.

A MultiWorkerMirroredStrategy must have been made in graph mode (the
program calls tf.compat.v1.disable_eager_execution() first), as under
Estimator: made eagerly, every task fails before training with the error
Estimator gives (TF 2.20 itself would not stop it).
"""

import tensorflow as tf

from trainer.compat import distribute_coordinator


def _check_strategy(strategy):
  """ValueError, with the message Estimator (TF 2.15) gives, for a
  MultiWorkerMirroredStrategy made eagerly."""
  collective = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
  if collective and tf.executing_eagerly():
    raise ValueError(
        'MultiWorkerMirroredStrategy cannot be deep copied in eager mode. If '
        "you're using Estimator and see this error message, call "
        'tf.compat.v1.disable_eager_execution() at the beginning of your '
        'program (RunConfig(train_distribute=MultiWorkerMirroredStrategy()) '
        'in train_and_evaluate on a TF_CONFIG cluster: Estimator trains it in '
        'graph mode only).')


def train_and_evaluate(estimator, train_spec, eval_spec, evaluate_continuously):
  """Runs this process's task; evaluate_continuously(estimator, train_spec,
  eval_spec) is the evaluator's loop."""
  config = estimator.config
  _check_strategy(config.train_distribute)

  def worker_fn(strategy):
    local = estimator._for_worker_context(  # pylint: disable=protected-access
        distribute_coordinator.worker_context(), strategy)
    local.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                hooks=list(train_spec.hooks))

  def eval_fn(strategy):
    local = estimator._for_worker_context(  # pylint: disable=protected-access
        distribute_coordinator.worker_context(), strategy)
    evaluate_continuously(local, train_spec, eval_spec)

  distribute_coordinator.run_independent_worker(
      worker_fn, config.train_distribute, eval_fn, config.eval_distribute,
      config.session_config)
