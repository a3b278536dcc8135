"""TensorFlow's Distribute Coordinator and what Estimator read from it.

tf.estimator ran `train_and_evaluate` with a `RunConfig(train_distribute=)`
strategy on a TF_CONFIG cluster through TF core's Distribute Coordinator
(tensorflow/python/distribute/distribute_coordinator.py, unchanged from TF
2.15 to 2.21, private): in INDEPENDENT_WORKER mode every task starts its
server (without the evaluator in its cluster), ps tasks serve, the chief
and workers call a worker function with a copy of the strategy configured
for their task, the evaluator an evaluation function. The facade runs the
same coordinator; these are its private entry points:
  * run_independent_worker(worker_fn, strategy, eval_fn, eval_strategy,
    session_config): the coordinator for this process's TF_CONFIG task;
  * worker_context(): the task's context inside worker_fn / eval_fn
    (cluster_spec, task_type, task_id, master_target, is_chief);
  * loss_reduce_op(): how Estimator reduces the per-replica losses it
    reports (the mean when a v1 optimizer scaled them by the replica count,
    else the sum).
"""

import tensorflow as tf


def _coordinator():
  from tensorflow.python.distribute import distribute_coordinator  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return distribute_coordinator


def run_independent_worker(worker_fn, strategy, eval_fn, eval_strategy,
                           session_config):
  """Runs this TF_CONFIG task under the Distribute Coordinator (a ps task
  serves and never returns)."""
  coordinator = _coordinator()
  return coordinator.run_distribute_coordinator(
      worker_fn, strategy, eval_fn, eval_strategy,
      mode=coordinator.CoordinatorMode.INDEPENDENT_WORKER,
      session_config=session_config)


def worker_context():
  """The coordinator's context of the running worker_fn / eval_fn (None
  outside one)."""
  from tensorflow.python.distribute import distribute_coordinator_context  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return distribute_coordinator_context.get_current_worker_context()


def loss_reduce_op():
  """The ReduceOp Estimator reports a distributed loss with: the v1
  optimizer's loss reduction if it scaled the loss in this graph (a private
  graph flag), else SUM."""
  graph = tf.compat.v1.get_default_graph()
  if getattr(graph, '_is_loss_scaled_by_optimizer', False):
    return tf.compat.v1.distribute.get_loss_reduction()
  return tf.distribute.ReduceOp.SUM
