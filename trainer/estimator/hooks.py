"""The estimator runner's adapters for preemption and non-finite checks.

Each session.run of TPUEstimator is one loop of iterations_per_loop steps on
TPU (one step on CPU), so these act within one loop.
"""

import numpy as np
import tensorflow as tf

from trainer.guard import nonfinite
from trainer.guard import preemption


class StopOnSigtermHook(tf.compat.v1.train.SessionRunHook):
  """Training: on SIGTERM, stops after this loop; the CheckpointSaverHook then
  saves at the current step as the session ends. Evaluation (`in_eval`):
  raises PreemptedError instead, so no partial metrics are written."""

  def __init__(self, model_dir, in_eval=False):
    self._model_dir = model_dir
    self._in_eval = in_eval

  def before_run(self, run_context):
    if self._in_eval:
      preemption.raise_if_requested('(evaluation)', self._model_dir)

  def after_run(self, run_context, run_values):
    if preemption.requested() and not self._in_eval:
      run_context.request_stop()


class FiniteLossHook(tf.compat.v1.train.SessionRunHook):
  """Raises NonFiniteLossError naming the step when the loss is NaN or Inf."""

  def __init__(self, model_dir):
    self._model_dir = model_dir

  def begin(self):
    self._loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)[-1]
    self._global_step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    loss = run_values.results
    if not np.all(np.isfinite(loss)):
      step = run_context.session.run(self._global_step)
      nonfinite.check_loss(loss, step, self._model_dir)


class FiniteVariablesListener(tf.compat.v1.train.CheckpointSaverListener):
  """Refuses to save a checkpoint whose float variables hold NaN or Inf."""

  def __init__(self, model_dir):
    self._model_dir = model_dir

  def begin(self):
    self._finite = {
        v.op.name: tf.reduce_all(tf.math.is_finite(v))
        for v in tf.compat.v1.global_variables() if v.dtype.base_dtype in (
            tf.float16, tf.bfloat16, tf.float32, tf.float64)}

  def before_save(self, session, global_step_value):
    nonfinite.check_variables(session.run(self._finite), global_step_value,
                              self._model_dir)
