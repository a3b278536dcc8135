"""The training-loop policy every runner follows, owned in one place.

A loop is what a runner runs between two looks from the host: one
tf.function call of the tf2 runner, one Orbit Controller.train call of the
native runner, one session.run of TPUEstimator
(iterations_per_loop steps on TPU, one step on CPU). After every loop the
runner hands `LoopPolicy.after_loop` the global step and the loop's losses;
the policy
  * raises NonFiniteLossError naming the first step whose loss is NaN or Inf;
  * logs the progress line (trainer/progress.py) once at least
    `steps_per_loop` steps passed since the last one, and at the end;
  * decides to save when the step reaches or passes a multiple of
    `save_every_steps`, at the end of train(to_step), and on SIGTERM;
  * decides to stop on SIGTERM (trainer/guard/preemption.py), after saving.
Before writing a checkpoint the runner calls `check_variables`, so no
checkpoint with NaN or Inf values is ever written, then `saved`.
"""

import collections
import numbers
import time

from absl import logging
import numpy as np

from trainer import progress
from trainer.guard import nonfinite
from trainer.guard import preemption

LoopDecision = collections.namedtuple('LoopDecision', ['save', 'stop'])


def _positive_integer(name, value):
  if (not isinstance(value, numbers.Integral) or isinstance(value, bool) or
      value <= 0):
    raise ValueError(f'`{name}` ({value!r}) must be a positive integer.')
  return int(value)


class LoopPolicy:
  """Checkpoint cadence, progress line, non-finite checks and SIGTERM stop."""

  def __init__(self, *, save_every_steps, steps_per_loop, global_batch,
               train_steps, model_dir, clock=time.monotonic):
    """All arguments keyword-only; integers must be positive.

    save_every_steps: checkpoint cadence in steps. steps_per_loop: steps per
    loop where the runner chooses (and the progress-line cadence).
    global_batch: examples per step, for examples/sec. train_steps: the
    run's last step, for the ETA. model_dir: named in non-finite errors.
    """
    self.save_every_steps = _positive_integer('save_every_steps',
                                              save_every_steps)
    self.steps_per_loop = _positive_integer('steps_per_loop', steps_per_loop)
    self.global_batch = _positive_integer('global_batch', global_batch)
    self.train_steps = _positive_integer('train_steps', train_steps)
    if not model_dir:
      raise ValueError(f'`model_dir` ({model_dir!r}) must be a directory.')
    self.model_dir = model_dir
    self._clock = clock
    self._to_step = None
    self._stop = False
    self.last_saved_step = None
    self._logged = None  # (step, time) of the last progress line.

  def begin(self, step, to_step):
    """Training continues from `step` (saved, or the initial state) to
    `to_step`."""
    self._to_step = to_step
    self._stop = False
    self.last_saved_step = step
    self._logged = (step, self._clock())

  def _to(self):
    if self._to_step is None:
      raise RuntimeError('LoopPolicy: call begin(step, to_step) first.')
    return self._to_step

  def loop_steps(self, step):
    """Steps of the next loop from `step`, for runners that choose: at most
    steps_per_loop, ending at the next multiple of save_every_steps or at
    to_step."""
    next_save = (step // self.save_every_steps + 1) * self.save_every_steps
    return min(self.steps_per_loop, self._to() - step, next_save - step)

  def after_loop(self, step, losses):
    """Checks and logs the loop that ended at `step`; a LoopDecision.

    losses: the loss of each step of the loop, or of its last step.
    Raises NonFiniteLossError naming the first step with a NaN or Inf loss.
    """
    self._to()
    nonfinite.check_losses(losses, step, self.model_dir)
    self._stop = self._stop or preemption.requested()
    self._log_progress(step, losses)
    return LoopDecision(save=self.should_save(step), stop=self._stop)

  @staticmethod
  def should_save_at_start(has_checkpoint):
    """As Estimator: a first checkpoint, of the initial state, when training
    starts in a model_dir that has none."""
    return not has_checkpoint

  def request_stop(self):
    """Stop after this loop, with a checkpoint (a SessionRunHook's
    request_stop(), or StopAtStepHook)."""
    self._stop = True

  def should_save(self, step):
    """Whether to checkpoint at `step`: not yet saved there, and a multiple
    of save_every_steps reached or passed, to_step reached, or stopping."""
    if step == self.last_saved_step:
      return False
    if self._stop or step >= self._to():
      return True
    every = self.save_every_steps
    return step // every > self.last_saved_step // every

  def check_variables(self, finite_by_name, step):
    """Before a save: NonFiniteLossError if a variable is NaN or Inf.

    finite_by_name: {variable name: whether all its values are finite}.
    """
    nonfinite.check_variables(finite_by_name, step, self.model_dir)

  def saved(self, step):
    """Records a checkpoint written at `step`."""
    self.last_saved_step = step

  def _log_progress(self, step, losses):
    last_step, last_time = self._logged
    if step - last_step < self.steps_per_loop and step < self._to_step:
      return
    now = self._clock()
    loss = np.asarray(losses).reshape(-1)[-1]
    values = progress.train_values(step - last_step, now - last_time,
                                   self.global_batch, loss,
                                   self.train_steps - step)
    logging.info('%s', progress.format_line('train', step, values))
    self._logged = (step, now)


def policy_for(params):
  """The LoopPolicy of params' training flags."""
  return LoopPolicy(save_every_steps=params['save_checkpoints_steps'],
                    steps_per_loop=params['iterations_per_loop'],
                    global_batch=params['train_batch_size'],
                    train_steps=params['train_steps'],
                    model_dir=params['model_dir'])
