"""The exporters of the facade: Exporter, FinalExporter, LatestExporter and
BestExporter, as tensorflow_estimator 2.15's exporter.py has them (same
arguments, checks and results); an EvalSpec runs them after evaluations.
"""

import os

import tensorflow as tf

from trainer.compat import estimator_calls
from trainer.facade import events
from trainer.facade import gc


class Exporter:
  """Base class of the exporters an EvalSpec runs after each evaluation."""

  @property
  def name(self):
    raise NotImplementedError

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    raise NotImplementedError


def _check_exports_to_keep(exports_to_keep):
  if exports_to_keep is not None and exports_to_keep <= 0:
    raise ValueError('`exports_to_keep`, if provided, must be a positive '
                     f'number. Got {exports_to_keep}')


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
    _check_exports_to_keep(exports_to_keep)
    self._keep = exports_to_keep

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    path = super().export(estimator, export_path, checkpoint_path,
                          eval_result, True)
    self._garbage_collect_exports(export_path)
    return path

  def _garbage_collect_exports(self, export_dir_base):
    """Deletes all but the newest exports_to_keep exports."""
    gc.keep_newest_exports(export_dir_base, self._keep)


def _loss_smaller(best_eval_result, current_eval_result):
  """BestExporter's default compare_fn: the current loss is smaller."""
  for which, result in (('best_eval_result', best_eval_result),
                        ('current_eval_result', current_eval_result)):
    if not result or 'loss' not in result:
      raise ValueError(f'{which} cannot be empty or no loss is found in it.')
  return best_eval_result['loss'] > current_eval_result['loss']


def _verify_compare_fn_args(compare_fn):
  if compare_fn is None:
    raise ValueError('`compare_fn` must not be None.')
  args = set(estimator_calls.fn_args(compare_fn))
  expected = {'best_eval_result', 'current_eval_result'}
  for name in sorted(expected - args):
    raise ValueError(f'compare_fn ({compare_fn}) must include {name} '
                     'argument.')
  if args - expected:
    raise ValueError(f'compare_fn ({compare_fn}) has following not expected '
                     f'args: {sorted(args - expected)}')


class BestExporter(FinalExporter):
  """Exports after an evaluation whose result compare_fn finds better than
  the best so far (the first evaluation of a run always exports); keeps the
  newest `exports_to_keep`. The best so far starts from the evaluation
  events already in model_dir (event_file_pattern), as Estimator's does."""

  def __init__(self, name='best_exporter', serving_input_receiver_fn=None,
               event_file_pattern='eval/*.tfevents.*',
               compare_fn=_loss_smaller, assets_extra=None, as_text=False,
               exports_to_keep=5):
    super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
    _verify_compare_fn_args(compare_fn)
    _check_exports_to_keep(exports_to_keep)
    self._compare_fn = compare_fn
    self._event_file_pattern = event_file_pattern
    self._keep = exports_to_keep
    self._model_dir = None
    self._best = None
    self._has_exported = False

  def _get_best_eval_result(self, event_files):
    """The best evaluation result (compare_fn) in the event files matching
    `event_files`, else None."""
    best = None
    for path in tf.io.gfile.glob(event_files):
      for _, result in events.scalar_events(path):
        if best is None or self._compare_fn(best, result):
          best = result
    return best

  def export(self, estimator, export_path, checkpoint_path, eval_result,
             is_the_final_export):
    if self._model_dir != estimator.model_dir and self._event_file_pattern:
      self._model_dir = estimator.model_dir
      self._best = self._get_best_eval_result(
          os.path.join(self._model_dir, self._event_file_pattern))
    if not (self._best is None or not self._has_exported or
            self._compare_fn(best_eval_result=self._best,
                             current_eval_result=eval_result)):
      return None
    self._best = eval_result
    path = super().export(estimator, export_path, checkpoint_path,
                          eval_result, True)
    self._garbage_collect_exports(export_path)
    self._has_exported = True
    return path

  def _garbage_collect_exports(self, export_dir_base):
    """Deletes all but the newest exports_to_keep exports."""
    gc.keep_newest_exports(export_dir_base, self._keep)
