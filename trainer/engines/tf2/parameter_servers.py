"""The tf2 runner on a TF_CONFIG cluster with "ps" tasks: TF2's
tf.distribute.experimental.ParameterServerStrategy with a ClusterCoordinator.

Every task runs the same `python -m trainer.main --runner=tf2 ...`; its
TF_CONFIG task says what it does:
  * chief: the coordinator. It makes the strategy (the model_fn's variables
    live on the ps tasks) and trains: each loop of steps is split into as
    many shares as there are workers, each share one call of the runner's
    loop function, which the coordinator dispatches to an idle worker,
    where it reads that worker's own input pipeline (the input_fn runs on
    every worker, create_per_worker_dataset); the workers' steps update the
    variables asynchronously. Hooks, host_call and checkpoints run on the
    coordinator, on the steps' values in scheduling order (user hooks that
    must see every step make loops of one step: one worker at a time);
    checkpoints keep TF1 names, so the graph engine and Estimator read them
    (and the runner reads theirs);
  * worker, ps: start their server and serve until stopped (TFJob deletes
    them when the chief succeeds);
  * evaluator: sidecar evaluation (evaluate_as_sidecar): evaluates each new
    checkpoint of model_dir with the model_fn's EVAL mode, on its own
    devices, writing model_dir/eval as Estimator's evaluator does, until
    one at or past the last training step.
"""

import signal
import time

from absl import logging
import tensorflow as tf

from trainer.compat import tf_private
from trainer.runtime import tf_config

SERVER_TASKS = ('worker', 'ps')


def coordinator_of(strategy):
  """The ClusterCoordinator of a ParameterServerStrategy (made on first
  use; one per strategy), else None."""
  if not isinstance(strategy,
                    tf.distribute.experimental.ParameterServerStrategy):
    return None
  return tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)


def check_coordinator_mode(config):
  """UnsupportedClusterError unless the chief of a ps cluster trains
  (--mode=train): evaluation there is the evaluator task's (sidecar)."""
  if config.mode != 'train':
    raise tf_config.UnsupportedClusterError(
        f'--mode={config.mode} on the chief of a TF_CONFIG cluster with '
        '"ps" tasks: the chief coordinates training (--mode=train); an '
        '"evaluator" task evaluates each checkpoint (sidecar evaluation), '
        'or run --mode=evaluate without TF_CONFIG once training is done.')


def describe_placement(module):
  """Logs where the model_fn's variables live (the ps tasks)."""
  devices = sorted({v.device for v in module.variables})
  logging.info('ParameterServerStrategy: %d variables on %s; steps on the '
               'workers.', len(module.variables), ', '.join(devices))
  return devices


def serve():
  """A worker or ps task: starts its server and serves until stopped
  (never returns). SIGTERM ends it at once (exit 143): it holds nothing to
  save; the coordinator's checkpoints hold the variables."""
  resolver = tf_config.training_cluster_resolver()
  kind, index = resolver.task_type, resolver.task_id
  logging.info('TF_CONFIG task %s:%s: serving the coordinator until stopped.',
               kind, index)
  try:
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=kind, task_index=index,
        protocol=resolver.rpc_layer, config=tf_config.server_config(),
        start=True)
  except (tf.errors.UnknownError, tf.errors.InternalError,
          tf.errors.UnavailableError) as e:  # Its port taken, say.
    raise tf_config.ServerStartError(tf_config.server_start_problem(
        f'{kind}:{index}', resolver.cluster_spec().task_address(
            kind, index))) from e
  signal.signal(signal.SIGTERM, signal.SIG_DFL)  # Not the run guard's.
  server.join()


def split_steps(num_steps, workers):
  """`num_steps` as one share per worker (the first ones one step larger),
  no empty share."""
  base, extra = divmod(num_steps, workers)
  return [base + (i < extra) for i in range(workers) if base + (i < extra)]


def evaluate_as_sidecar(runner, config, poll_secs=1.0):
  """The evaluator task: evaluates each new checkpoint of model_dir (as
  Estimator's evaluator, every --eval_steps batches or the whole input)
  until one at or past --train_steps (without --train_steps, until
  stopped); the last metrics."""
  model_dir, last_step = config.model_dir, config.train_steps
  seen, metrics = None, {}
  while True:
    path = tf.train.latest_checkpoint(model_dir)
    if path is None or path == seen:
      time.sleep(poll_secs)
      continue
    seen = path
    try:
      metrics = runner.evaluate(config.eval_steps or None,
                                checkpoint_path=path)
    except (tf.errors.NotFoundError, ValueError) as e:
      if tf.io.gfile.exists(path + '.index'):
        raise  # The model's or the input's error, not a vanished file.
      # Garbage-collected under us (keep_checkpoint_max): the next one.
      logging.warning('Checkpoint %s went away while evaluated (%s); '
                      'waiting for the next one.', path, e)
      continue
    step = int(metrics.get('global_step', 0))
    logging.info('Sidecar evaluation of %s: %s', path, metrics)
    if last_step and step >= last_step:
      return metrics


def task_role():
  """'evaluator' for a TF_CONFIG evaluator task; 'coordinator' or 'server'
  for the other tasks of a cluster with "ps" tasks; None otherwise."""
  kind = tf_config.task_type()
  if kind == 'evaluator':
    return 'evaluator'
  if not tf_config.has_ps():
    return None
  if kind in SERVER_TASKS:
    return 'server'
  return 'coordinator'


def traceable(iterator):
  """What a loop function is traced with for `iterator`: itself, or the
  type spec of a per-worker iterator (as ClusterCoordinator.schedule traces
  it)."""
  return tf_private.per_worker_type_spec(iterator)


def run_loop(strategy, loop, iterator, num_steps):
  """loop(iterator, num_steps) outputs (losses, host values, hook values),
  each stacked along steps: run here, or, under a ClusterCoordinator, as
  one share of the steps per worker (split_steps), scheduled together and
  dispatched to idle workers (which train asynchronously), their outputs
  concatenated in scheduling order."""
  coordinator = coordinator_of(strategy)
  if coordinator is None:
    return loop(iterator, tf.constant(num_steps))
  workers = tf_config.training_cluster_resolver().cluster_spec().num_tasks(
      'worker')
  shares = split_steps(num_steps, workers)
  results = [coordinator.schedule(loop, args=(iterator, tf.constant(n)))
             for n in shares]
  coordinator.join()
  outputs = [r.fetch() for r in results]
  losses = tf.concat([o[0] for o in outputs], axis=0)
  host = tuple(tf.concat([o[1][i] for o in outputs], axis=0)
               for i in range(len(outputs[0][1])))
  hooked = tf.concat([o[2] for o in outputs], axis=0)
  return losses, host, hooked
