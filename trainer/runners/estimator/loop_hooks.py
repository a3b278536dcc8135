"""The estimator runner's session hooks: thin adapters over
trainer/runtime/loop.py.

Each session.run of TPUEstimator is one loop (iterations_per_loop steps on
TPU, one step on CPU). `LoopPolicyHook` hands the policy the step and loss
after each and stops the session when it says so; `CheckpointSaverHook` is
Estimator's own saver (initial save, saving listeners, the save at the end)
saving when the policy says; `FiniteVariablesListener` has the policy check
the variables before each save; `ProfilerHook` writes the profile of
--profile_steps.
"""

import tensorflow as tf

from trainer.compat import tf_private

_v1 = tf.compat.v1


class LoopPolicyHook(_v1.train.SessionRunHook):
  """After every loop: LoopPolicy.after_loop; stops when it decides to."""

  def __init__(self, policy, to_step):
    self._policy = policy
    self._to_step = to_step

  def begin(self):
    losses = _v1.get_collection(_v1.GraphKeys.LOSSES)
    if not losses:
      raise RuntimeError('LoopPolicyHook: no loss in the LOSSES collection.')
    self._loss = losses[-1]
    self._global_step = _v1.train.get_global_step()

  def after_create_session(self, session, coord):
    del coord
    self._policy.begin(int(session.run(self._global_step)), self._to_step)

  def before_run(self, run_context):
    return _v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    step = int(run_context.session.run(self._global_step))
    if self._policy.after_loop(step, run_values.results).stop:
      run_context.request_stop()


class _PolicyTimer:
  """The timer interface CheckpointSaverHook uses, answered by the policy.

  The hook asks first about an upper bound of the step (the step before the
  run plus a large steps_per_run), which the policy answers yes (past
  to_step), then about the real step read after the run.
  """

  def __init__(self, policy):
    self._policy = policy

  def should_trigger_for_step(self, step):
    return self._policy.should_save(step)

  def update_last_triggered_step(self, step):
    self._policy.saved(step)

  def last_triggered_step(self):
    return self._policy.last_saved_step


class CheckpointSaverHook(_v1.train.CheckpointSaverHook):
  """Estimator's CheckpointSaverHook whose cadence is the LoopPolicy's.

  Goes after LoopPolicyHook in the hooks list, so the policy has seen the
  loop when asked whether to save it.
  """

  def __init__(self, policy, model_dir, listeners=None):
    super().__init__(model_dir, save_steps=policy.save_every_steps,
                     listeners=listeners)
    self._timer = _PolicyTimer(policy)


class FiniteVariablesListener(_v1.train.CheckpointSaverListener):
  """Has the policy refuse a checkpoint whose float variables hold NaN/Inf."""

  def __init__(self, policy):
    self._policy = policy

  def begin(self):
    self._finite = {
        v.op.name: tf.reduce_all(tf.math.is_finite(v))
        for v in _v1.global_variables() if v.dtype.base_dtype.is_floating}

  def before_save(self, session, global_step_value):
    self._policy.check_variables(session.run(self._finite), global_step_value)


class ProfilerHook(_v1.train.SessionRunHook):
  """tf.profiler over --profile_steps (trainer/runtime/profiling.py), started
  and stopped between session.runs; the global step comes from the read each run
  fetches, so profiling adds no session.run."""

  def __init__(self, window, steps_per_run):
    self._window = window
    self._steps_per_run = steps_per_run

  def begin(self):
    self._read = tf_private.global_step_read()

  def after_create_session(self, session, coord):
    del coord
    self._window.before_steps(int(session.run(self._read)),
                              self._steps_per_run)

  def before_run(self, run_context):
    return _v1.train.SessionRunArgs(self._read)

  def after_run(self, run_context, run_values):
    step = int(run_values.results) + self._steps_per_run
    self._window.after_steps(step)
    self._window.before_steps(step, self._steps_per_run)

  def end(self, session):
    self._window.stop(int(session.run(self._read)))
