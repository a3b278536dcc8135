"""The training-loop policy every runner follows, owned in one place.

A loop is what a runner runs between two looks from the host: one
tf.function call of the tf2 runner, one Orbit Controller.train call of the
native runner, one session.run of TPUEstimator
(iterations_per_loop steps on TPU, one step on CPU). After every loop the
runner hands `LoopPolicy.after_loop` the global step and the loop's losses;
the policy
  * raises NonFiniteLossError naming the first step whose loss is NaN or Inf;
  * logs the progress line (trainer/runtime/progress.py) once at least
    `steps_per_loop` steps passed since the last one, and at the end;
  * sizes the loops where the runner lets it (`loop_steps`): up to
    `steps_per_loop` steps, or, given `loop_secs`, as many as take about
    that long, learned from the loops so far (TPUEstimator's
    `iterations_per_loop='60s'`, iteration_count.py: the first loop is one
    step);
  * decides to save when the step reaches or passes a multiple of
    `save_every_steps` (or `save_every_secs` passed since the last save, as
    Estimator's save_checkpoints_secs), at the end of train(to_step), and
    when it stops;
  * decides to stop on SIGTERM (trainer/guard/preemption.py), when a hook
    asks or when the input ends (`request_stop`), after saving.
Training may run without a last step (to_step None, Estimator.train with
neither steps nor max_steps): it then ends when the input does.
Before writing a checkpoint the runner calls `check_variables`, so no
checkpoint with NaN or Inf values is ever written, then `saved`.
"""

import collections
import numbers
import time

from absl import logging
import numpy as np

from trainer.guard import nonfinite
from trainer.guard import preemption
from trainer.runtime import iteration_count
from trainer.runtime import progress

LoopDecision = collections.namedtuple('LoopDecision', ['save', 'stop'])


def _positive_integer(name, value, optional=False):
  if optional and value is None:
    return None
  if (not isinstance(value, numbers.Integral) or isinstance(value, bool) or
      value <= 0):
    raise ValueError(f'`{name}` ({value!r}) must be a positive integer'
                     f'{" or None" if optional else ""}.')
  return int(value)


def _positive_number(name, value):
  if value is None:
    return None
  if (not isinstance(value, numbers.Real) or isinstance(value, bool) or
      value <= 0):
    raise ValueError(f'`{name}` ({value!r}) must be a positive number or '
                     'None.')
  return value


class LoopPolicy:
  """Checkpoint cadence, progress line, non-finite checks and SIGTERM stop."""

  def __init__(self, *, save_every_steps, steps_per_loop, global_batch,
               train_steps, model_dir, save_every_secs=None,
               loop_secs=None, clock=time.monotonic):
    """All arguments keyword-only; integers must be positive.

    save_every_steps: checkpoint cadence in steps, or None. save_every_secs:
    cadence in seconds instead (not both); with neither, checkpoints are
    written only when training starts and ends. steps_per_loop: steps per
    loop where the runner chooses (and the progress-line cadence).
    global_batch: examples per step, for examples/sec (None: unknown, e.g.
    an Estimator input_fn that batches itself). train_steps: the run's last
    step, for the ETA (None: unknown). model_dir: named in non-finite
    errors. loop_secs: size loops to about this many seconds instead of
    steps_per_loop steps (which then sets only the progress line's
    cadence), or None.
    """
    self.save_every_steps = _positive_integer('save_every_steps',
                                              save_every_steps, optional=True)
    self.save_every_secs = _positive_number('save_every_secs',
                                            save_every_secs)
    if save_every_steps is not None and save_every_secs is not None:
      raise ValueError('`save_every_steps` and `save_every_secs` cannot both '
                       'be set.')
    self.steps_per_loop = _positive_integer('steps_per_loop', steps_per_loop)
    self.loop_secs = _positive_number('loop_secs', loop_secs)
    self._loop_counts = (iteration_count.IterationCountEstimator()
                         if self.loop_secs else None)
    self._loop_started = None  # clock() when the sized loop began.
    self.global_batch = _positive_integer('global_batch', global_batch,
                                          optional=True)
    self.train_steps = _positive_integer('train_steps', train_steps,
                                         optional=True)
    if not model_dir:
      raise ValueError(f'`model_dir` ({model_dir!r}) must be a directory.')
    self.model_dir = model_dir
    self._clock = clock
    self._begun = False
    self._to_step = None
    self._stop = False
    self.last_saved_step = None
    self._last_saved_time = None
    self._logged = None  # (step, time) of the last progress line.

  def replace(self, **changes):
    """A new policy with some constructor arguments changed (e.g. one
    Estimator.train call's checkpoint cadence)."""
    args = dict(save_every_steps=self.save_every_steps,
                save_every_secs=self.save_every_secs,
                steps_per_loop=self.steps_per_loop,
                global_batch=self.global_batch, train_steps=self.train_steps,
                model_dir=self.model_dir, loop_secs=self.loop_secs,
                clock=self._clock)
    args.update(changes)
    return LoopPolicy(**args)

  def begin(self, step, to_step):
    """Training continues from `step` (saved, or the initial state) to
    `to_step` (None: until the input ends)."""
    self._begun = True
    self._to_step = to_step
    self._stop = False
    self.last_saved_step = step
    self._last_saved_time = self._clock()
    self._logged = (step, self._clock())

  def _to(self):
    """The last step (inf without one); raises before begin()."""
    if not self._begun:
      raise RuntimeError('LoopPolicy: call begin(step, to_step) first.')
    return float('inf') if self._to_step is None else self._to_step

  def loop_steps(self, step):
    """Steps of the next loop from `step`, for runners that choose: at most
    steps_per_loop (or what fits in loop_secs), ending at the next multiple
    of save_every_steps or at to_step."""
    if self._loop_counts is not None:
      steps = min(self._loop_counts.get(self.loop_secs), self._to() - step)
      self._loop_started = self._clock()
    else:
      steps = min(self.steps_per_loop, self._to() - step)
    if self.save_every_steps:
      every = self.save_every_steps
      steps = min(steps, (step // every + 1) * every - step)
    return int(steps)

  def after_loop(self, step, losses, preempted=None):
    """Checks and logs the loop that ended at `step`; a LoopDecision.

    losses: the loss of each step of the loop, or of its last step.
    preempted: whether to stop for SIGTERM, as the caller decided it (the
    loop driver: once per loop, agreed by every worker); None reads
    trainer/guard/preemption.py here.
    Raises NonFiniteLossError naming the first step with a NaN or Inf loss.
    """
    self._to()
    self._time_loop(losses)
    nonfinite.check_losses(losses, step, self.model_dir)
    if preempted is None:
      preempted = preemption.requested()
    self._stop = self._stop or preempted
    self._log_progress(step, losses)
    return LoopDecision(save=self.should_save(step), stop=self._stop)

  def _time_loop(self, losses):
    """Records how long the loop loop_steps sized took (TPUEstimator's
    ElapsedTime line), for the next loop's size."""
    if self._loop_started is None:
      return
    elapsed = self._clock() - self._loop_started
    self._loop_started = None
    logging.info('ElapsedTime: %.3f', elapsed)
    self._loop_counts.update(elapsed, int(np.asarray(losses).size))

  @staticmethod
  def should_save_at_start(has_checkpoint):
    """As Estimator: a first checkpoint, of the initial state, when training
    starts in a model_dir that has none."""
    return not has_checkpoint

  def request_stop(self):
    """Stop after this loop, with a checkpoint (a SessionRunHook's
    request_stop(), StopAtStepHook, a CheckpointSaverListener, or the end
    of the input)."""
    self._stop = True

  def should_save(self, step):
    """Whether to checkpoint at `step`: not yet saved there, and a multiple
    of save_every_steps reached or passed (or save_every_secs passed),
    to_step reached, or stopping."""
    if step == self.last_saved_step:
      return False
    if self._stop or step >= self._to():
      return True
    if self.save_every_secs is not None:
      return self._clock() - self._last_saved_time >= self.save_every_secs
    every = self.save_every_steps
    if every is None:
      return False
    return step // every > self.last_saved_step // every

  def check_variables(self, finite_by_name, step):
    """Before a save: NonFiniteLossError if a variable is NaN or Inf.

    finite_by_name: {variable name: whether all its values are finite}.
    """
    nonfinite.check_variables(finite_by_name, step, self.model_dir)

  def saved(self, step):
    """Records a checkpoint written at `step`."""
    self.last_saved_step = step
    self._last_saved_time = self._clock()

  def _log_progress(self, step, losses):
    last_step, last_time = self._logged
    if (step - last_step < self.steps_per_loop and step < self._to() and
        not self._stop):
      return
    losses = np.asarray(losses).reshape(-1)
    if not losses.size:  # The input ended before this loop's first step.
      return
    now = self._clock()
    remaining = (None if self.train_steps is None
                 else self.train_steps - step)
    values = progress.train_values(step - last_step, now - last_time,
                                   self.global_batch, losses[-1], remaining)
    logging.info('%s', progress.format_line('train', step, values))
    self._logged = (step, now)


def policy_for(config):
  """The LoopPolicy of a Config's training settings (trainer/config.py; the
  Estimator facade's may hold save_checkpoints_secs, and 0 for an unknown
  batch size or last step)."""
  return LoopPolicy(save_every_steps=config.save_checkpoints_steps,
                    save_every_secs=config.save_checkpoints_secs,
                    steps_per_loop=config.iterations_per_loop,
                    loop_secs=config.iterations_per_loop_secs or None,
                    global_batch=config.train_batch_size or None,
                    train_steps=config.train_steps or None,
                    model_dir=config.model_dir)
