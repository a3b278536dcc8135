"""Estimator.train's training loop in a TF1 graph: one
MonitoredTrainingSession per call, as tf.estimator does.

The Estimator builds the graph (trainer/facade/estimator.py,
_train_model_default), seeded with RunConfig.tf_random_seed under the
RunConfig's device function: global_step and its read, the input_fn's
features and labels, the model_fn's TRAIN spec; train_with_spec() runs it.
Warm-starting happens when model_dir has no checkpoint. A `loss` summary is
added unless the model_fn made one. Hooks, in Estimator's order: the input's, the call's (with its
StopAtStepHook), NanTensorHook, LoggingTensorHook(loss, step) every
log_step_count_steps, the spec's training_hooks; chief-only: a
CheckpointSaverHook at the RunConfig's cadence (unless a hook is one; the
saving listeners attach to the first), the spec's training_chief_hooks. The
session (tensorflow.python.training.training.MonitoredTrainingSession)
writes summaries every save_summary_steps and global_step/sec every
log_step_count_steps, except in a master+worker cluster, where worker 0
writes them. The loop runs [train_op, loss] until a hook stops it or the
input ends. On a task of a cluster with ps tasks, session.master is the
task's server and a ps that stays unreachable ends the task
(cluster.watching_ps_tasks).
"""

import tensorflow as tf

from trainer.compat import facade_private
from trainer.compat import tf_private
from trainer.engines.graph import cluster
from trainer.guard import checkpoint_fit

_v1 = tf.compat.v1


def _maybe_warm_start(program):
  if program.warm_start and not tf.train.latest_checkpoint(program.model_dir):
    _v1.logging.info('Warm-starting with WarmStartSettings: %s',
                     program.warm_start)
    _v1.train.warm_start(*program.warm_start)


def _master_worker_cluster(config):
  spec = config.cluster_spec
  jobs = spec.jobs if spec else []
  return 'worker' in jobs and 'master' in jobs


def train_with_spec(program, spec, worker_hooks, hooks, global_step,
                    saving_listeners, session_checkpoints=False):
  """Runs the training loop of a TRAIN spec built in the default graph (see
  the module docstring); session_checkpoints: the MonitoredTrainingSession
  itself checkpoints at the RunConfig's cadence, without listeners, as
  Estimator trains under MultiWorkerMirroredStrategy. The last loss."""
  config = program.config
  _maybe_warm_start(program)
  if not any(s.op.name == 'loss'
             for s in _v1.get_collection(_v1.GraphKeys.SUMMARIES)):
    _v1.summary.scalar('loss', spec.loss)
  _v1.add_to_collection(_v1.GraphKeys.LOSSES, spec.loss)
  worker_hooks.extend(hooks)
  worker_hooks.append(_v1.train.NanTensorHook(spec.loss))
  if config.log_step_count_steps is not None:
    worker_hooks.append(_v1.train.LoggingTensorHook(
        {'loss': spec.loss, 'step': global_step},
        every_n_iter=config.log_step_count_steps))
  worker_hooks.extend(spec.training_hooks)
  if not (spec.scaffold.saver or _v1.get_collection(_v1.GraphKeys.SAVERS)):
    _v1.add_to_collection(_v1.GraphKeys.SAVERS, _v1.train.Saver(
        sharded=True, max_to_keep=config.keep_checkpoint_max,
        keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
        defer_build=True, save_relative_paths=True))

  if session_checkpoints:
    return _run(spec, _session(
        program, spec, worker_hooks, tuple(spec.training_chief_hooks),
        save_checkpoint_secs=config.save_checkpoints_secs,
        save_checkpoint_steps=config.save_checkpoints_steps,
        save_summaries_steps=config.save_summary_steps,
        log_step_count_steps=config.log_step_count_steps))

  chief_hooks = []
  all_hooks = worker_hooks + list(spec.training_chief_hooks)
  saver_hooks = [h for h in all_hooks
                 if isinstance(h, _v1.train.CheckpointSaverHook)]
  if config.save_checkpoints_secs or config.save_checkpoints_steps:
    if not saver_hooks:
      chief_hooks = [_v1.train.CheckpointSaverHook(
          program.model_dir, save_secs=config.save_checkpoints_secs,
          save_steps=config.save_checkpoints_steps, scaffold=spec.scaffold,
          save_graph_def=config.checkpoint_save_graph_def)]
      saver_hooks = chief_hooks[:1]
  if saving_listeners:
    if not saver_hooks:
      raise ValueError(
          'There should be a CheckpointSaverHook to use saving_listeners. '
          'Please set one of the RunConfig.save_checkpoints_steps or '
          'RunConfig.save_checkpoints_secs.')
    for listener in saving_listeners:
      facade_private.add_saver_listener(saver_hooks[0], listener)

  save_summary_steps = config.save_summary_steps
  log_step_count_steps = config.log_step_count_steps
  if _master_worker_cluster(config):
    # Worker 0 writes summaries: the master also evaluates.
    save_summary_steps, log_step_count_steps = 0, None
    if config.task_type == 'worker' and config.task_id == 0:
      if config.save_summary_steps and config.save_summary_steps > 0:
        worker_hooks.append(_v1.train.SummarySaverHook(
            save_steps=config.save_summary_steps,
            output_dir=config.model_dir, scaffold=spec.scaffold))
      if config.log_step_count_steps and config.log_step_count_steps > 0:
        worker_hooks.append(_v1.train.StepCounterHook(
            every_n_steps=config.log_step_count_steps,
            output_dir=config.model_dir))

  with cluster.watching_ps_tasks(config):
    return _run(spec, _session(
        program, spec, worker_hooks,
        tuple(chief_hooks) + tuple(spec.training_chief_hooks),
        save_checkpoint_secs=0, save_summaries_steps=save_summary_steps,
        log_step_count_steps=log_step_count_steps))


def _session(program, spec, hooks, chief_only_hooks, **cadence):
  """Estimator's MonitoredTrainingSession on RunConfig.master, once the
  checkpoint it would restore is known to fit the model."""
  config = program.config
  checkpoint_fit.check_saver(spec.scaffold.saver,
                             tf.train.latest_checkpoint(program.model_dir))
  session_fn = tf_private.training_module().MonitoredTrainingSession
  if session_fn is tf.compat.v1.train.MonitoredTrainingSession:
    # TF's own session would wait for a missing server; one a program or
    # test put in its place connects nowhere, as under Estimator.
    cluster.check_master(config)
  return session_fn(
      master=config.master, is_chief=config.is_chief,
      checkpoint_dir=program.model_dir, scaffold=spec.scaffold,
      hooks=hooks, chief_only_hooks=chief_only_hooks,
      config=program.session_config,
      max_wait_secs=config.session_creation_timeout_secs,
      save_graph_def=config.checkpoint_save_graph_def, **cadence)


def _run(spec, session):
  """Runs [train_op, loss] until the session stops; the last loss."""
  loss, steps = None, 0
  with session as mon_sess:
    while not mon_sess.should_stop():
      steps += 1
      _, loss = mon_sess.run([spec.train_op, spec.loss])
  if steps == 0:
    _v1.logging.warn('Training with estimator made no steps. Perhaps input '
                     'is empty or misspecified.')
  return loss
