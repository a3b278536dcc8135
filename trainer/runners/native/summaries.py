"""Estimator's default training summaries, written by the native runner.

Estimator writes `loss` (SummarySaverHook, every save_summary_steps from the
first step of each train() call) and `global_step/sec` (StepCounterHook, every
log_step_count_steps) to model_dir; the tf2 runner writes the same
(trainer/engines/tf2/summaries.py). The native runner has every step's loss on
the host after each loop, so `TrainingSummaries` writes both tags from there, at
the same steps and with SecondOrStepTimer's cadence. Evaluation summaries
(model_dir/eval) are trainer/runtime/eval_summaries.py's.
"""

import time

import numpy as np
import tensorflow as tf

_v1 = tf.compat.v1


class TrainingSummaries:
  """Writes `loss` and `global_step/sec` to `model_dir` after each loop.

  save_summary_steps / log_step_count_steps: 0 turns that tag off.
  """

  def __init__(self, model_dir, save_summary_steps, log_step_count_steps,
               clock=time.monotonic):
    self._model_dir = model_dir
    self._loss_every = save_summary_steps
    self._rate_every = log_step_count_steps
    self._clock = clock
    self._writer = None
    self.begin(0)

  def begin(self, step):
    """A train() call starts at global step `step`: the timers start again,
    as a new Estimator.train()'s hooks do."""
    self._loss_timer = _v1.train.SecondOrStepTimer(
        every_steps=self._loss_every or None)
    self._rate_start = (step, self._clock())  # Where the rate counts from.

  def _write(self, tag, value, step):
    if self._writer is None:
      self._writer = tf.summary.create_file_writer(self._model_dir)
    with self._writer.as_default():
      tf.summary.scalar(tag, float(value), step=step)

  def after_loop(self, step, losses):
    """The loop that ended at global step `step` had per-step `losses`."""
    losses = np.asarray(losses).reshape(-1)
    first = step - losses.size + 1
    if self._loss_every:
      for i, loss in enumerate(losses):
        if self._loss_timer.should_trigger_for_step(first + i):
          self._loss_timer.update_last_triggered_step(first + i)
          self._write('loss', loss, first + i)
    now = self._clock()
    if self._rate_every:
      if step - self._rate_start[0] >= self._rate_every:
        seconds = now - self._rate_start[1]
        if seconds > 0:
          self._write('global_step/sec', (step - self._rate_start[0]) /
                      seconds, step)
        self._rate_start = (step, now)
    if self._writer is not None:
      self._writer.flush()
