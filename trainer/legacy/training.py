"""TrainSpec, EvalSpec, exporters and train_and_evaluate of the facade.

train_and_evaluate behaves as Estimator's:
  * locally (no TF_CONFIG cluster): trains to TrainSpec.max_steps and, after
    every checkpoint but the one written when training starts, evaluates the
    latest checkpoint at most every EvalSpec.throttle_secs, then once more at
    the end if the last step was not evaluated; exporters run after each
    evaluation. Returns (metrics of the last evaluation, export results);
  * task 'chief' / 'worker' of a TF_CONFIG cluster: trains only (the tf2
    runner's MultiWorkerMirroredStrategy); task 'evaluator': evaluates each
    new checkpoint until one reaches max_steps;
  * task 'ps': parameter-server training is not supported.
"""

import collections
import os
import time

from absl import logging
import tensorflow as tf

from trainer.legacy import estimator as estimator_lib
from trainer.legacy import hooks as hooks_lib
from trainer.legacy import run_config
from trainer.tf2 import checkpoint_listeners


def _check_input_fn(input_fn):
  if not callable(input_fn):
    raise TypeError(f'`input_fn` must be callable, given: {input_fn}')


class TrainSpec(collections.namedtuple(
    'TrainSpec', ['input_fn', 'max_steps', 'hooks', 'saving_listeners'])):
  """The "train" part of train_and_evaluate."""

  def __new__(cls, input_fn, max_steps=None, hooks=None,
              saving_listeners=None):
    _check_input_fn(input_fn)
    if max_steps is not None and max_steps <= 0:
      raise ValueError(f'Must specify max_steps > 0, given: {max_steps}')
    return super().__new__(
        cls, input_fn, max_steps,
        tuple(hooks_lib.check_hooks(hooks, 'TrainSpec.hooks')),
        tuple(checkpoint_listeners.check_listeners(saving_listeners)))


class EvalSpec(collections.namedtuple('EvalSpec', [
    'input_fn', 'steps', 'name', 'hooks', 'exporters', 'start_delay_secs',
    'throttle_secs'])):
  """The "eval" part of train_and_evaluate."""

  def __new__(cls, input_fn, steps=100, name=None, hooks=None,
              exporters=None, start_delay_secs=120, throttle_secs=600):
    _check_input_fn(input_fn)
    if steps is not None and steps <= 0:
      raise ValueError(f'Must specify steps > 0, given: {steps}')
    if name is not None and not isinstance(name, str):
      raise TypeError(f'`name` must be string, given: {name}')
    if exporters is None:
      exporters = ()
    elif isinstance(exporters, Exporter):
      exporters = (exporters,)
    exporters = tuple(exporters)
    for exporter in exporters:
      if not isinstance(exporter, Exporter):
        raise TypeError(f'`exporters` must be an Exporter, given {exporter}')
    names = [e.name for e in exporters]
    if len(set(names)) != len(names):
      raise ValueError(f'`exporters` must have unique names: {names}')
    if start_delay_secs < 0 or throttle_secs < 0:
      raise ValueError('Must specify start_delay_secs >= 0 and throttle_secs '
                       f'>= 0, given: {start_delay_secs}, {throttle_secs}')
    return super().__new__(
        cls, input_fn, steps, name,
        tuple(hooks_lib.check_hooks(hooks, 'EvalSpec.hooks')), exporters,
        start_delay_secs, throttle_secs)


class Exporter:
  """Base class of the exporters an EvalSpec runs after each evaluation."""

  @property
  def name(self):
    raise NotImplementedError

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    raise NotImplementedError


class FinalExporter(Exporter):
  """Exports once, after the final evaluation."""

  def __init__(self, name, serving_input_receiver_fn, assets_extra=None,
               as_text=False):
    if not name:
      raise ValueError('`name` must be defined.')
    self._name = name
    self._receiver_fn = serving_input_receiver_fn
    self._assets_extra = assets_extra
    self._as_text = as_text

  @property
  def name(self):
    return self._name

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    del eval_result
    if not is_the_final_export:
      return None
    return estimator.export_saved_model(
        export_path, self._receiver_fn, assets_extra=self._assets_extra,
        as_text=self._as_text, checkpoint_path=checkpoint_path)


class LatestExporter(FinalExporter):
  """Exports after every evaluation; keeps the newest `exports_to_keep`."""

  def __init__(self, name, serving_input_receiver_fn, assets_extra=None,
               as_text=False, exports_to_keep=5):
    super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
    if exports_to_keep is not None and exports_to_keep <= 0:
      raise ValueError(
          '`exports_to_keep`, if provided, must be a positive number. Got '
          f'{exports_to_keep}')
    self._keep = exports_to_keep

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    path = super().export(estimator, export_path, checkpoint_path,
                          eval_result, True)
    if self._keep:
      exports = sorted(d for d in tf.io.gfile.listdir(export_path)
                       if d.strip('/').isdigit())
      for old in exports[:-self._keep]:
        tf.io.gfile.rmtree(os.path.join(export_path, old.strip('/')))
    return path


class _Evaluator:
  """Evaluates the latest checkpoint (once per checkpoint) and exports."""

  def __init__(self, estimator, eval_spec, max_steps):
    self._estimator = estimator
    self._spec = eval_spec
    self._max_steps = max_steps
    self._previous = None
    self.metrics = None
    self.export_results = []

  def evaluate_and_export(self):
    """Evaluates a new latest checkpoint; False if there was none."""
    latest = self._estimator.latest_checkpoint()
    if not latest or latest == self._previous:
      return False
    self.metrics = self._estimator.evaluate(
        self._spec.input_fn, steps=self._spec.steps, name=self._spec.name,
        checkpoint_path=latest, hooks=self._spec.hooks)
    final = bool(self._max_steps and
                 self.metrics['global_step'] >= self._max_steps)
    base = os.path.join(self._estimator.model_dir, 'export')
    self.export_results = [
        e.export(self._estimator, os.path.join(base, e.name), latest,
                 self.metrics, final) for e in self._spec.exporters]
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
  time.sleep(eval_spec.start_delay_secs)
  evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
  for _ in tf.compat.v1.train.checkpoints_iterator(
      estimator.model_dir, min_interval_secs=eval_spec.throttle_secs):
    evaluator.evaluate_and_export()
    if train_spec.max_steps and evaluator.metrics and (
        evaluator.metrics['global_step'] >= train_spec.max_steps):
      break
  return evaluator.metrics, evaluator.export_results


def train_and_evaluate(estimator, train_spec, eval_spec):
  """Trains and evaluates as tf.estimator.train_and_evaluate does."""
  if not isinstance(estimator, estimator_lib.Estimator):
    raise TypeError('`estimator` must have type `tf.estimator.Estimator`, '
                    f'given {type(estimator)}')
  if not isinstance(train_spec, TrainSpec):
    raise TypeError(f'`train_spec` must have type `tf.estimator.TrainSpec`. '
                    f'Got: {type(train_spec)}')
  if not isinstance(eval_spec, EvalSpec):
    raise TypeError(f'`eval_spec` must have type `tf.estimator.EvalSpec`. '
                    f'Got: {type(eval_spec)}')
  config = estimator.config
  task = config.task_type
  if task == run_config.TaskType.PS:
    raise NotImplementedError(
        'train_and_evaluate on a "ps" task: parameter-server training is not '
        'supported by trainer.legacy; use TF_CONFIG "chief"/"worker" tasks '
        '(MultiWorkerMirroredStrategy).')
  if task == run_config.TaskType.EVALUATOR:
    return _continuous_evaluation(estimator, train_spec, eval_spec)
  if task is not None and config.num_worker_replicas > 1:
    estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                    hooks=train_spec.hooks,
                    saving_listeners=train_spec.saving_listeners)
    return None, []
  logging.info(
      'Start train and evaluate loop. The evaluate will happen after every '
      'checkpoint. Checkpoint frequency is determined based on RunConfig '
      'arguments: save_checkpoints_steps %s or save_checkpoints_secs %s.',
      config.save_checkpoints_steps, config.save_checkpoints_secs)
  evaluator = _Evaluator(estimator, eval_spec, train_spec.max_steps)
  listener = _EvaluateAfterSave(evaluator, eval_spec.throttle_secs)
  estimator.train(train_spec.input_fn, max_steps=train_spec.max_steps,
                  hooks=train_spec.hooks,
                  saving_listeners=list(train_spec.saving_listeners) +
                  [listener])
  return evaluator.metrics, evaluator.export_results
