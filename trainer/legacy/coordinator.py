"""train_and_evaluate with a strategy on a TF_CONFIG cluster, as Estimator.

With RunConfig(train_distribute=STRATEGY) and a TF_CONFIG cluster without a
master, tf.estimator runs train_and_evaluate through TF's Distribute
Coordinator in INDEPENDENT_WORKER mode (trainer/compat/
distribute_coordinator.py runs the same coordinator): every task but the
evaluator starts its server (its cluster without the evaluator); a ps task
serves until stopped; the chief and each worker train a copy of the
Estimator whose RunConfig has the task's own settings (task_type, task_id,
master, is_chief, ...) and a copy of the strategy configured for the task,
with TrainSpec's hooks but not its saving listeners and without a start-up
delay; the evaluator evaluates each new checkpoint and exports, with
eval_distribute. No task returns a result.
"""

from trainer.compat import distribute_coordinator


def train_and_evaluate(estimator, train_spec, eval_spec, evaluate_continuously):
  """Runs this process's task; evaluate_continuously(estimator, train_spec,
  eval_spec) is the evaluator's loop."""
  config = estimator.config

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
