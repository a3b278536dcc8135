"""The outer loop shared by every runner: what each --mode does.

`run` owns the outer loop, the evaluation cadence and what is written
where; a `Runner` (trainer/runners/estimator/runner.py,
trainer/engines/tf2/engine.py, trainer/runners/native/runner.py) runs steps,
evaluations, predictions and exports. Within train() every runner follows one
loop policy (trainer/runtime/loop.py): on SIGTERM train() checkpoints and
returns early, and `run` then raises PreemptedError
(trainer/guard/preemption.py).
"""

import functools
import json
import os
from typing import Any, Dict, Iterable, Optional, Protocol

from absl import logging
import numpy as np
import tensorflow as tf

from trainer.guard import preemption
from trainer.runtime import progress

PREDICTIONS_FILE = 'predictions.jsonl'


class Runner(Protocol):
  """What `run` needs of a runner."""

  def global_step(self) -> int:
    """The current global step (the latest checkpoint's, 0 without one)."""

  def train(self, to_step: int) -> None:
    """Trains until the global step is `to_step`, checkpointing as the loop
    policy says; returns early, after a checkpoint, on SIGTERM."""

  def evaluate(self, steps: Optional[int]) -> Dict[str, Any]:
    """Metrics over `steps` batches (all the input when None), including
    'loss' and 'global_step', from the latest checkpoint."""

  def predict(self) -> Iterable[Dict[str, Any]]:
    """One dict of numpy values per input example, in input order."""

  def export(self, export_dir: str) -> str:
    """Writes a SavedModel under `export_dir`; returns its path."""

  def latest_checkpoint(self) -> Optional[str]:
    """model_dir's latest checkpoint prefix, None if there is none."""


def _call_for_mode(input_fn, mode, params):
  return input_fn(dict(params, mode=mode))


def input_fn_for_mode(input_fn, mode):
  """input_fn(params) with params['mode'] set to `mode` (train, eval or
  infer); its argument is named `params`, as TPUEstimator requires."""
  return functools.partial(_call_for_mode, input_fn, mode)


def _to_python(value):
  if isinstance(value, np.ndarray):
    return value.tolist()
  if isinstance(value, np.generic):
    return value.item()
  return value


def write_predictions(predictions, path):
  """Writes one JSON object per example; atomically (temp file + rename;
  none left when predicting fails)."""
  tmp = path + '.incomplete'
  count = 0
  try:
    with tf.io.gfile.GFile(tmp, 'w') as f:
      for prediction in predictions:
        if not isinstance(prediction, dict):  # A model_fn's lone tensor.
          prediction = {'predictions': prediction}
        f.write(json.dumps({k: _to_python(v) for k, v in prediction.items()}))
        f.write('\n')
        count += 1
  except BaseException:  # Leave nothing of a prediction that failed.
    if tf.io.gfile.exists(tmp):
      tf.io.gfile.remove(tmp)
    raise
  tf.io.gfile.rename(tmp, path, overwrite=True)
  return count


def evaluate(runner: Runner, eval_steps):
  """runner.evaluate(eval_steps), logged as an eval line, in Python types."""
  metrics = {k: _to_python(v) for k, v in runner.evaluate(eval_steps).items()}
  step = metrics.pop('global_step', runner.global_step())
  logging.info('%s', progress.format_line('eval', step, metrics))
  return dict(metrics, global_step=step)


def _train(runner: Runner, config, to_step):
  """runner.train(to_step); PreemptedError if it stopped early on SIGTERM."""
  latest = runner.latest_checkpoint()
  if latest:  # What a resumed run starts from, also with quiet TF logs.
    logging.info('Restoring parameters from %s', latest)
  runner.train(to_step)
  preemption.raise_if_requested(runner.global_step(), config.model_dir)


_NEEDS_CHECKPOINT = {'evaluate': 'evaluate', 'predict': 'predict with',
                     'export': 'export'}


def _configured_eval_steps(config):
  return config.eval_steps or None


def run(runner: Runner, config, eval_steps=None):
  """Runs config.mode (a trainer.config.Config's) with `runner`; returns
  what it produced.

  eval_steps: () -> the evaluation steps (None: until the input ends),
  called once where the mode evaluates; it raises ValueError where the
  input never ends. The front end passes its input's
  (trainer/models/inputs.py); default: --eval_steps, else the whole input.
  """
  mode = config.mode
  if mode in _NEEDS_CHECKPOINT and runner.latest_checkpoint() is None:
    raise ValueError(f'--model_dir={config.model_dir} has no checkpoint '
                     f'to {_NEEDS_CHECKPOINT[mode]}.')
  resolve_eval_steps = eval_steps or functools.partial(
      _configured_eval_steps, config)
  if mode == 'train':
    _train(runner, config, config.train_steps)
    return {'global_step': runner.global_step()}
  if mode == 'evaluate':
    return evaluate(runner, resolve_eval_steps())
  if mode == 'train_and_evaluate':
    steps = resolve_eval_steps()
    step = runner.global_step()
    metrics = None
    while step < config.train_steps:
      step = min(step + config.steps_per_eval, config.train_steps)
      _train(runner, config, step)
      metrics = evaluate(runner, steps)
      step = metrics['global_step']
    if metrics is None:  # Already trained: evaluate what is there.
      metrics = evaluate(runner, steps)
    return metrics
  if mode == 'predict':
    path = os.path.join(config.model_dir, PREDICTIONS_FILE)
    count = write_predictions(runner.predict(), path)
    logging.info('Wrote %d predictions to %s.', count, path)
    return {'predictions_file': path, 'count': count}
  if mode == 'export':
    path = runner.export(config.export_dir)
    logging.info('Exported SavedModel to %s.', path)
    return {'export_path': path}
  raise ValueError(f'--mode={mode!r} is not one of train, evaluate, '
                   'train_and_evaluate, predict, export.')
