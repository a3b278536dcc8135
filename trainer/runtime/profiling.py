"""--profile_steps=N,M: a TensorBoard profile of those steps in model_dir.

`StepWindow` starts tf.profiler when training enters the steps that take
global_step from N to M and stops it when global_step reaches M (or training
ends first); the profile lands in MODEL_DIR/plugins/profile/RUN/, where
TensorBoard's profile tab (tensorboard-plugin-profile) reads it. Both runners
call it around each unit they run: the estimator runner around each
session.run (one step on CPU, iterations_per_loop steps on TPU), the tf2
runner around each loop, so its granularity is iterations_per_loop steps.
"""

from absl import logging
import tensorflow as tf


class StepWindow:
  """Starts and stops the profiler at step boundaries of one run."""

  def __init__(self, logdir, profile_steps):
    """profile_steps: [N, M] with N < M, or empty for no profile."""
    self._logdir = logdir
    self._first, self._last = profile_steps or (None, None)
    self._running = False
    self.done = not profile_steps

  def before_steps(self, step, count):
    """Before running `count` steps from global step `step`."""
    if self.done or self._running:
      return
    if step < self._last and step + count > self._first:
      tf.profiler.experimental.start(self._logdir)
      self._running = True
      logging.info('Profiling from global step %d (--profile_steps=%d,%d).',
                   step, self._first, self._last)

  def after_steps(self, step):
    """After steps that ended at global step `step`."""
    if self._running and step >= self._last:
      self.stop(step)

  def stop(self, step):
    """Stops a running profile (training ended at `step`)."""
    if self._running:
      tf.profiler.experimental.stop()
      self._running = False
      self.done = True
      logging.info('Profile of global steps up to %d written to %s/plugins/'
                   'profile.', step, self._logdir)
