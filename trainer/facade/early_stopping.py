"""tf.estimator.experimental's early-stopping hooks, under the facade.

(Also make_stop_at_checkpoint_step_hook: the chief stops at `last_step`; any
other worker once model_dir's checkpoint has reached it.)

As Estimator's: a hook made by `make_early_stopping_hook` (and the four
stop_if_* helpers built on it) calls `should_stop_fn` every
`run_every_secs` or `run_every_steps` of training; when it returns True, it
sets the variable `signal_early_stopping/STOP` (so it is in the
checkpoint, as under Estimator) and requests stop. A worker that is not the
chief gets a hook that stops when it sees that variable set. The stop_if_*
predicates read the evaluation summaries in `eval_dir` (default: the
estimator's, 'eval'), step by step, as `read_eval_metrics` returns them.
"""

import collections
import operator
import os
import time

import tensorflow as tf

from trainer.facade import estimator as estimator_lib
from trainer.facade import events
from trainer.facade.hooks import hooks as hooks_lib

# Estimator logs on TF's logger; absl's would call logging.basicConfig()
# before the program's app.run, and TF's log lines would print twice.
logging = tf.compat.v1.logging

_v1 = tf.compat.v1


def read_eval_metrics(eval_dir):
  """{step: {tag: value}} of the scalar summaries in eval_dir's event
  files, in step order (unreadable tails of files are skipped)."""
  by_step = collections.defaultdict(dict)
  if tf.io.gfile.exists(eval_dir):
    for path in tf.io.gfile.glob(os.path.join(eval_dir, '*.tfevents.*')):
      try:
        for step, values in events.scalar_events(path):
          by_step[step].update(values)
      except tf.errors.DataLossError as e:
        logging.warning('Skipping the rest of %s: %s', path, e)
  return collections.OrderedDict(sorted(by_step.items()))


def _get_or_create_stop_var():
  with _v1.variable_scope('signal_early_stopping', values=[],
                          reuse=_v1.AUTO_REUSE):
    return _v1.get_variable(
        'STOP', shape=[], dtype=tf.bool,
        initializer=_v1.initializers.constant(False),
        collections=[_v1.GraphKeys.GLOBAL_VARIABLES], trainable=False)


class _StopOnPredicateHook(hooks_lib.SessionRunHook):
  """The chief's hook: asks should_stop_fn on its timer; stops on True."""

  def __init__(self, should_stop_fn, run_every_secs=60, run_every_steps=None):
    if not callable(should_stop_fn):
      raise TypeError('`should_stop_fn` must be callable.')
    self._should_stop_fn = should_stop_fn
    self._timer = hooks_lib.SecondOrStepTimer(every_secs=run_every_secs,
                                              every_steps=run_every_steps)
    self._global_step = None
    self._stop_var = None
    self._stop_op = None

  def begin(self):
    self._global_step = _v1.train.get_global_step()
    self._stop_var = _get_or_create_stop_var()
    self._stop_op = _v1.assign(self._stop_var, True)

  def before_run(self, run_context):
    del run_context
    return hooks_lib.SessionRunArgs(self._global_step)

  def after_run(self, run_context, run_values):
    step = run_values.results
    if not self._timer.should_trigger_for_step(step):
      return
    self._timer.update_last_triggered_step(step)
    if self._should_stop_fn():
      logging.info('Requesting early stopping at global step %d', step)
      run_context.session.run(self._stop_op)
      run_context.request_stop()


class _CheckForStoppingHook(hooks_lib.SessionRunHook):
  """A non-chief worker's hook: stops once the chief set the variable."""

  def __init__(self):
    self._stop_var = None

  def begin(self):
    self._stop_var = _get_or_create_stop_var()

  def before_run(self, run_context):
    del run_context
    return hooks_lib.SessionRunArgs(self._stop_var)

  def after_run(self, run_context, run_values):
    if run_values.results:
      logging.info('Early stopping requested by the chief.')
      run_context.request_stop()


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60,
                             run_every_steps=None):
  """The hook that stops training once should_stop_fn() returns True."""
  if not isinstance(estimator, estimator_lib.Estimator):
    raise TypeError('`estimator` must have type `tf.estimator.Estimator`. '
                    f'Got: {type(estimator)}')
  if run_every_secs is not None and run_every_steps is not None:
    raise ValueError('Only one of `run_every_secs` and `run_every_steps` must '
                     'be set.')
  if estimator.config.is_chief:
    return _StopOnPredicateHook(should_stop_fn, run_every_secs,
                                run_every_steps)
  return _CheckForStoppingHook()


def _eval_dir(estimator, eval_dir):
  return eval_dir or estimator.eval_dir()


def _stop_if_threshold_crossed_hook(estimator, metric_name, threshold,
                                    higher_is_better, eval_dir, min_steps,
                                    run_every_secs, run_every_steps):
  eval_dir = _eval_dir(estimator, eval_dir)
  better = operator.gt if higher_is_better else operator.lt

  def crossed():
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step >= min_steps and better(metrics[metric_name], threshold):
        logging.info('At step %s, metric "%s" has value %s which is %s than '
                     'the threshold %s: stopping.', step, metric_name,
                     metrics[metric_name],
                     'higher' if higher_is_better else 'lower', threshold)
        return True
    return False

  return make_early_stopping_hook(estimator, crossed, run_every_secs,
                                  run_every_steps)


def _stop_if_no_metric_improvement_hook(estimator, metric_name,
                                        max_steps_without_improvement,
                                        higher_is_better, eval_dir, min_steps,
                                        run_every_secs, run_every_steps):
  eval_dir = _eval_dir(estimator, eval_dir)
  better = operator.gt if higher_is_better else operator.lt

  def stalled():
    best, best_step = None, None
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step < min_steps:
        continue
      if best is None or better(metrics[metric_name], best):
        best, best_step = metrics[metric_name], step
      if step - best_step >= max_steps_without_improvement:
        logging.info('No %s in metric "%s" for %s steps, which is >= %s: '
                     'stopping.', 'increase' if higher_is_better else
                     'decrease', metric_name, step - best_step,
                     max_steps_without_improvement)
        return True
    return False

  return make_early_stopping_hook(estimator, stalled, run_every_secs,
                                  run_every_steps)


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None,
                        min_steps=0, run_every_secs=60, run_every_steps=None):
  """Stops once an evaluation's metric_name is above threshold."""
  return _stop_if_threshold_crossed_hook(estimator, metric_name, threshold, True, eval_dir,
                         min_steps, run_every_secs, run_every_steps)


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None,
                       min_steps=0, run_every_secs=60, run_every_steps=None):
  """Stops once an evaluation's metric_name is below threshold."""
  return _stop_if_threshold_crossed_hook(estimator, metric_name, threshold, False, eval_dir,
                         min_steps, run_every_secs, run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name,
                             max_steps_without_increase, eval_dir=None,
                             min_steps=0, run_every_secs=60,
                             run_every_steps=None):
  """Stops once metric_name has not increased for that many steps."""
  return _stop_if_no_metric_improvement_hook(estimator, metric_name,
                              max_steps_without_increase, True, eval_dir,
                              min_steps, run_every_secs, run_every_steps)


def stop_if_no_decrease_hook(estimator, metric_name,
                             max_steps_without_decrease, eval_dir=None,
                             min_steps=0, run_every_secs=60,
                             run_every_steps=None):
  """Stops once metric_name has not decreased for that many steps."""
  return _stop_if_no_metric_improvement_hook(estimator, metric_name,
                              max_steps_without_decrease, False, eval_dir,
                              min_steps, run_every_secs, run_every_steps)


class _StopAtCheckpointStepHook(hooks_lib.SessionRunHook):
  """A non-chief worker's hook: stops once the checkpoint in model_dir has
  reached last_step; rereads it at most every wait_after_file_check_secs."""

  def __init__(self, model_dir, last_step, wait_after_file_check_secs=30):
    if last_step is None:
      raise ValueError('last_step must be specified.')
    if model_dir is None:
      raise ValueError('model_dir must be specified.')
    self._model_dir = model_dir
    self._last_step = last_step
    self._wait_secs = wait_after_file_check_secs

  def begin(self):
    self._global_step = _v1.train.get_global_step()
    if self._global_step is None:
      raise RuntimeError(
          'Global step should be created to use StopAtCheckpointStepHook.')

  def before_run(self, run_context):
    del run_context
    return hooks_lib.SessionRunArgs(self._global_step)

  def after_run(self, run_context, run_values):
    if run_values.results + 1 < self._last_step:
      return
    if (estimator_lib.load_global_step_from_checkpoint_dir(self._model_dir)
        >= self._last_step):
      run_context.request_stop()
    else:
      time.sleep(self._wait_secs)


def make_stop_at_checkpoint_step_hook(estimator, last_step,
                                      wait_after_file_check_secs=30):
  """StopAtStepHook(last_step) on the chief; elsewhere a hook that waits for
  the chief's checkpoint at last_step."""
  if estimator.config.is_chief:
    return hooks_lib.StopAtStepHook(last_step=last_step)
  return _StopAtCheckpointStepHook(estimator.model_dir, last_step,
                                   wait_after_file_check_secs)
