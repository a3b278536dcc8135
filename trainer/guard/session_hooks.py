"""Session hooks that turn a received SIGTERM / SIGINT (guard/preemption.py)
into a stop of an Estimator's training or evaluation.

`StopOnSignalHook` asks the training session to stop after the step (or
TPU loop) that was running: the session then ends normally, and
Estimator's CheckpointSaverHook writes its checkpoint at that step in its
end(). `AbortOnSignalHook` stops an evaluation at once with PreemptedError
(partial metrics would be wrong; an evaluation inside training runs right
after a checkpoint, so nothing trained is lost). The launcher
(estimator_guard.py) and the estimator runner's evaluate() add them. `StepRecorderHook`
keeps the global step of the latest step, for a failure's report ("Loss
is nan at step N").

Neither training hook needs a boundary after every step
(`steps_between_runs_matter = False`): the tf2 engine, which stops a
strategy's training on a signal after its loop of steps, replays them after
the loop (an unknown hook may stop training at any step, so it runs inside
the loop after each step, or, across workers, gets one step a loop, as
Estimator's session.run).
"""

import tensorflow as tf

from trainer.guard import preemption

_v1 = tf.compat.v1


class StopOnSignalHook(_v1.train.SessionRunHook):
  """Requests a stop after the running step once a signal was received."""

  steps_between_runs_matter = False  # The engine stops after its loop.

  def after_run(self, run_context, run_values):
    del run_values
    if preemption.requested():
      run_context.request_stop()


class AbortOnSignalHook(_v1.train.SessionRunHook):
  """Raises PreemptedError before a step once a signal was received."""

  def __init__(self, model_dir):
    self._model_dir = model_dir
    self._step = '(an evaluation)'

  def begin(self):
    self._global_step = _v1.train.get_global_step()

  def after_create_session(self, session, coord):
    del coord  # The evaluated checkpoint's step: where training stopped.
    if self._global_step is not None:
      self._step = int(session.run(self._global_step))

  def before_run(self, run_context):
    preemption.raise_if_requested(self._step, self._model_dir)


class StepRecorderHook(_v1.train.SessionRunHook):
  """Keeps `step`: the global step each run read (as Estimator's
  LoggingTensorHook shows it, `loss = ..., step = N`), None before the
  first run."""

  steps_between_runs_matter = False  # It only records what a step read.

  def __init__(self):
    self.step = None
    self._global_step = None

  def begin(self):
    self._global_step = _v1.train.get_global_step()

  def before_run(self, run_context):
    del run_context
    if self._global_step is None:
      return None
    return _v1.train.SessionRunArgs(self._global_step)

  def after_run(self, run_context, run_values):
    del run_context
    if run_values.results is not None:
      self.step = int(run_values.results)
