"""TrainSpec, EvalSpec and train_and_evaluate of the facade (the exporters an
EvalSpec runs are in exporter.py).

train_and_evaluate behaves as Estimator's:
  * locally (no TF_CONFIG cluster): trains to TrainSpec.max_steps and, after
    every checkpoint but the one written when training starts, evaluates the
    latest checkpoint at most every EvalSpec.throttle_secs, then once more at
    the end if the last step was not evaluated; exporters run after each
    evaluation. Returns (metrics of the last evaluation, export results);
  * on a task of a TF_CONFIG cluster, what that task does under Estimator,
    and returns None:
    - 'chief' / 'worker' (between-graph replication): starts the task's
      server, waits its start-up delay (workers) and trains on the graph
      engine; with 'ps' tasks in the cluster the variables live there and
      every task trains them asynchronously, the chief checkpoints. Without
      ps tasks each task's variables are its own (on its server): the chief
      trains and checkpoints alone, and a worker waits for a chief that
      never initialises its variables until
      RunConfig.session_creation_timeout_secs, as Estimator's does;
    - 'master': as the chief, and evaluates and exports after its
      checkpoints (the older layout, without an evaluator task);
    - 'ps': starts its server and serves until stopped (never returns);
    - 'evaluator': evaluates each new checkpoint and runs the exporters,
      until one reaches max_steps;
    with a RunConfig train_distribute strategy (no master), the Distribute
    Coordinator runs the task instead (trainer/facade/coordinator.py).
"""

import collections
import os
import time

import tensorflow as tf

from trainer.facade import coordinator
from trainer.facade import estimator as estimator_lib
from trainer.facade import exporter as exporter_lib
from trainer.facade import run_config
from trainer.engines.graph import cluster
from trainer.facade.hooks import hooks as hooks_lib

# Estimator logs on TF's logger; absl's would call logging.basicConfig()
# before the program's app.run, and TF's log lines would print twice.
logging = tf.compat.v1.logging


def _validate_input_fn(input_fn):
  if not callable(input_fn):
    raise TypeError(f'`input_fn` must be callable, given: {input_fn}')


def _validate_hooks(hooks):
  """hooks as a tuple; Estimator's TypeError if one is no SessionRunHook."""
  hooks = tuple(hooks or ())
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise TypeError(
          f'All hooks must be `SessionRunHook` instances, given: {hook}')
  return hooks


def _validate_saving_listeners(saving_listeners):
  """saving_listeners as a tuple; Estimator's TypeError for a wrong type."""
  listeners = tuple(saving_listeners or ())
  for listener in listeners:
    if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
      raise TypeError('All saving_listeners must be `CheckpointSaverListener` '
                      f'instances, given: {listener}')
  return listeners


def _validate_exporters(exporters):
  """exporters as a tuple of uniquely, non-emptily named Exporters."""
  if not exporters:
    return ()
  if isinstance(exporters, exporter_lib.Exporter):
    exporters = [exporters]
  wrong_type = TypeError('`exporters` must be an Exporter, an iterable of '
                         f'Exporter, or `None`, found {exporters}.')
  try:
    exporters = list(exporters)
  except TypeError:
    raise wrong_type from None
  names = []
  for exporter in exporters:
    if not isinstance(exporter, exporter_lib.Exporter):
      raise wrong_type
    name = exporter.name
    if not name:
      raise ValueError('An Exporter cannot have a name that is `None` or '
                       f'empty. All exporter names: '
                       f'{[e.name for e in exporters]}')
    if not isinstance(name, str):
      raise ValueError(f'An Exporter must have a string name. Given: '
                       f'{type(name)}')
    if name in names:
      raise ValueError('`exporters` must have unique names. Such a name '
                       'cannot be `None`. All exporter names: '
                       f'{[e.name for e in exporters]}')
    names.append(name)
  return tuple(exporters)


class TrainSpec(collections.namedtuple(
    'TrainSpec', ['input_fn', 'max_steps', 'hooks', 'saving_listeners'])):
  """The "train" part of train_and_evaluate."""

  def __new__(cls, input_fn, max_steps=None, hooks=None,
              saving_listeners=None):
    _validate_input_fn(input_fn)
    if max_steps is not None and max_steps <= 0:
      raise ValueError(f'Must specify max_steps > 0, given: {max_steps}')
    return super().__new__(
        cls, input_fn, max_steps, _validate_hooks(hooks),
        _validate_saving_listeners(saving_listeners))


class EvalSpec(collections.namedtuple('EvalSpec', [
    'input_fn', 'steps', 'name', 'hooks', 'exporters', 'start_delay_secs',
    'throttle_secs'])):
  """The "eval" part of train_and_evaluate."""

  def __new__(cls, input_fn, steps=100, name=None, hooks=None,
              exporters=None, start_delay_secs=120, throttle_secs=600):
    _validate_input_fn(input_fn)
    if steps is not None and steps <= 0:
      raise ValueError(f'Must specify steps > 0, given: {steps}')
    if name is not None and not isinstance(name, str):
      raise TypeError(f'`name` must be string, given: {name}')
    hooks = _validate_hooks(hooks)
    exporters = _validate_exporters(exporters)
    if start_delay_secs < 0:
      raise ValueError(
          f'Must specify start_delay_secs >= 0, given: {start_delay_secs}')
    if throttle_secs < 0:
      raise ValueError(
          f'Must specify throttle_secs >= 0, given: {throttle_secs}')
    return super().__new__(
        cls, input_fn, steps, name, hooks, exporters,
        start_delay_secs, throttle_secs)


class _Evaluator:
  """Evaluates the latest checkpoint (once per checkpoint) and exports."""

  def __init__(self, estimator, eval_spec, max_steps):
    self._estimator = estimator
    self._spec = eval_spec
    self._max_steps = max_steps
    self._previous = None
    self.metrics = None
    self.export_results = None  # Estimator's: None until an evaluation.

  def evaluate_and_export(self):
    """Evaluates a new latest checkpoint; False if there was none, or if
    the trainer deleted it (RunConfig.keep_checkpoint_max) before it was
    evaluated and exported (logged; the next checkpoint is evaluated)."""
    latest = self._estimator.latest_checkpoint()
    if not latest or latest == self._previous:
      return False
    try:
      metrics = self._estimator.evaluate(
          self._spec.input_fn, steps=self._spec.steps, name=self._spec.name,
          checkpoint_path=latest, hooks=self._spec.hooks)
      final = bool(self._max_steps and
                   metrics['global_step'] >= self._max_steps)
      base = os.path.join(self._estimator.model_dir, 'export')
      export_results = [
          e.export(self._estimator, os.path.join(base, e.name), latest,
                   metrics, final) for e in self._spec.exporters]
    except (ValueError, tf.errors.NotFoundError) as e:
      if tf.io.gfile.exists(latest + '.index'):
        raise
      logging.warning(
          'Checkpoint %s was deleted while it was evaluated or exported (the '
          'trainer keeps RunConfig.keep_checkpoint_max checkpoints): %s; '
          'going on with the next checkpoint.', latest,
          str(e).splitlines()[0])
      self._previous = latest
      return False
    self.metrics, self.export_results = metrics, export_results
    self._previous = latest
    return True


class _EvaluateAfterSave(hooks_lib.CheckpointSaverListener):
  """Evaluates after checkpoints (not the first), every throttle_secs."""

  def __init__(self, evaluator, throttle_secs):
    self._evaluator = evaluator
    self._throttle_secs = throttle_secs
    self._timer = None
    self._first = True

  def begin(self):
    self._timer = hooks_lib.SecondOrStepTimer(every_secs=self._throttle_secs)
    self._first = True

  def after_save(self, session, global_step_value):
    del session
    if self._first:  # The checkpoint written when training starts.
      self._first = False
      return
    if self._timer.should_trigger_for_step(global_step_value):
      self._timer.update_last_triggered_step(global_step_value)
      self._evaluator.evaluate_and_export()
    else:
      logging.info('Skip the current checkpoint eval due to throttle secs '
                   '(%s secs).', self._throttle_secs)

  def end(self, session, global_step_value):
    del session
    if global_step_value != self._timer.last_triggered_step():
      self._evaluator.evaluate_and_export()


def _continuous_evaluation(estimator, train_spec, eval_spec):
  """The 'evaluator' task: each new checkpoint until max_steps is reached."""
  if eval_spec.start_delay_secs:
    logging.info('Waiting %f secs before starting eval.',
                 eval_spec.start_delay_secs)
    time.sleep(eval_spec.start_delay_secs)
  evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
  for _ in tf.compat.v1.train.checkpoints_iterator(
      estimator.model_dir, min_interval_secs=eval_spec.throttle_secs):
    evaluator.evaluate_and_export()
    step = evaluator.metrics and evaluator.metrics['global_step']
    if train_spec.max_steps and step and step >= train_spec.max_steps:
      logging.info('Exiting evaluation, global_step=%s >= train max_steps=%s',
                   step, train_spec.max_steps)
      break


def _train_with_evaluation(estimator, train_spec, eval_spec):
  """Trains; evaluates and exports after checkpoints (see _EvaluateAfterSave)
  and returns (metrics of the last evaluation, export results)."""
  evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
  listener = _EvaluateAfterSave(evaluator, eval_spec.throttle_secs)
  estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                  hooks=train_spec.hooks,
                  saving_listeners=list(train_spec.saving_listeners) +
                  [listener])
  return evaluator.metrics, evaluator.export_results


def _run_local(estimator, train_spec, eval_spec):
  config = estimator.config
  logging.info(
      'Start train and evaluate loop. The evaluate will happen after every '
      'checkpoint. Checkpoint frequency is determined based on RunConfig '
      'arguments: save_checkpoints_steps %s or save_checkpoints_secs %s.',
      config.save_checkpoints_steps, config.save_checkpoints_secs)
  return _train_with_evaluation(estimator, train_spec, eval_spec)


def _start_training_task(estimator, train_spec, saving_listeners):
  """A chief, master or worker: its server, its start-up delay, training
  (between-graph replication)."""
  config = estimator.config
  if not cluster.platform_runs_servers():
    cluster.start_server(config)
  cluster.warn_if_never_initialised(config)
  cluster.delay_worker(config)
  estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                  hooks=train_spec.hooks, saving_listeners=saving_listeners)


def _run_chief(estimator, train_spec, eval_spec):
  del eval_spec  # The evaluator task evaluates and exports.
  _start_training_task(estimator, train_spec, train_spec.saving_listeners)


def _run_worker(estimator, train_spec, eval_spec):
  del eval_spec
  _start_training_task(estimator, train_spec, ())


def _run_master(estimator, train_spec, eval_spec):
  """The master trains and, after its checkpoints, evaluates and exports."""
  evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
  listener = _EvaluateAfterSave(evaluator, eval_spec.throttle_secs)
  _start_training_task(estimator, train_spec,
                       tuple(train_spec.saving_listeners) + (listener,))


def _run_evaluator(estimator, train_spec, eval_spec):
  _continuous_evaluation(estimator, train_spec, eval_spec)


def _run_ps(estimator, train_spec, eval_spec):
  del train_spec, eval_spec
  cluster.serve(estimator.config)


# What each TF_CONFIG task type does in train_and_evaluate (Estimator's).
_TASKS = {
    run_config.TaskType.CHIEF: _run_chief,
    run_config.TaskType.EVALUATOR: _run_evaluator,
    run_config.TaskType.MASTER: _run_master,
    run_config.TaskType.PS: _run_ps,
    run_config.TaskType.WORKER: _run_worker,
}


def _assert_eval_spec(eval_spec):
  if not isinstance(eval_spec, EvalSpec):
    raise TypeError(f'`eval_spec` must have type `tf.estimator.EvalSpec`. '
                    f'Got: {type(eval_spec)}')


def _is_google_env():
  """Whether TF_CONFIG's `environment` is 'google'."""
  tf_config = run_config.tf_config_from_env()
  if not tf_config:
    logging.warn('TF_CONFIG should not be empty in distributed environment.')
  return tf_config.get('environment') == 'google'


class _EvalStatus:
  """What an evaluator's look for a checkpoint found."""
  EVALUATED = 'evaluated'
  MISSING_CHECKPOINT = 'missing checkpoint'
  NO_NEW_CHECKPOINT = 'no new checkpoint'


def train_and_evaluate(estimator, train_spec, eval_spec):
  """Trains and evaluates as tf.estimator.train_and_evaluate does."""
  if not isinstance(estimator, estimator_lib.Estimator):
    raise TypeError('`estimator` must have type `tf.estimator.Estimator`, '
                    f'given {type(estimator)}')
  if not isinstance(train_spec, TrainSpec):
    raise TypeError(f'`train_spec` must have type `tf.estimator.TrainSpec`. '
                    f'Got: {type(train_spec)}')
  _assert_eval_spec(eval_spec)
  config = estimator.config
  task = config.task_type
  if run_config.uses_distribute_coordinator(config):
    logging.info('Running `train_and_evaluate` with Distribute Coordinator.')
    coordinator.train_and_evaluate(estimator, train_spec, eval_spec,
                                   _continuous_evaluation)
    return None
  logging.info('Not using Distribute Coordinator.')
  if task == run_config.TaskType.EVALUATOR and config.task_id > 0:
    raise ValueError(
        'For distributed training, there can only be one `evaluator` task '
        f'(with task id 0).  Given task id {config.task_id}')
  if not config.cluster_spec and task != run_config.TaskType.EVALUATOR:
    logging.info('Running training and evaluation locally '
                 '(non-distributed).')
    return _run_local(estimator, train_spec, eval_spec)
  # As Estimator: a distributed task returns None.
  if not task:
    raise ValueError(
        '`estimator.config` must have task_type set. This usually means '
        'TF_CONFIG environment is not set correctly.')
  if task == 'local':
    raise ValueError(
        '`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and '
        '`task` properties in TF_CONFIG absent triggers train and evaluate '
        '`Estimator` locally (non-distributed).')
  if task not in _TASKS:
    raise ValueError(f'Task type {task} is not supported. Supported task '
                     f'types are {sorted(_TASKS)}')
  _TASKS[task](estimator, train_spec, eval_spec)
  return None
