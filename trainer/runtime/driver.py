"""The one training-loop driver of the tf2 and native runners.

As Orbit's Controller owns the outer loop of an AbstractTrainer, `train` owns it
here: a runner's `LoopTrainer` runs one loop of steps when asked (one
tf.function call of the tf2 runner, one Orbit Controller.train call of the
native one) and writes a checkpoint when asked; the driver decides, with the
loop policy (trainer/runtime/loop.py), how many steps each loop runs, when to
save (at the start of a model_dir without a checkpoint, at the cadence, at the
end, when stopping) and when to stop (the last step, SIGTERM, a hook's request,
the end of the input, a saver listener's request).

SIGTERM in a job of several workers: after every loop the workers agree
(`LoopTrainer.any_worker`, one collective) whether any of them received
it, so all stop after the same loop, each writes its checkpoint at the same
step, and all exit as preempted.
"""

import dataclasses
from typing import Optional, Protocol, Sequence

from absl import logging

from trainer.guard import preemption


@dataclasses.dataclass
class LoopResult:
  """What one loop of a LoopTrainer did."""
  losses: Sequence[float]  # One per step run; fewer than asked: input ended.
  stop: bool = False  # A hook asked to stop after this loop.


class LoopTrainer(Protocol):
  """What the driver needs of a runner's training."""

  def global_step(self) -> int:
    """The step the model's variables are at."""

  def latest_checkpoint(self) -> Optional[str]:
    """model_dir's latest checkpoint, None without one."""

  def begin(self) -> None:
    """Called once before the first loop of a train() call."""

  def max_loop_steps(self) -> Optional[int]:
    """A bound on the steps of a loop the trainer imposes (user hooks that
    must see every step), None for none."""

  def finite_variables(self) -> dict:
    """{variable name: whether all its values are finite}, before a save."""

  def train_loop(self, num_steps: int) -> LoopResult:
    """Runs up to `num_steps` steps (fewer if the input ends)."""

  def save(self, step: int) -> bool:
    """Writes a checkpoint at `step`; True if training must stop there
    (a CheckpointSaverListener asked)."""

  def end(self) -> None:
    """Called once after the last loop (also when a loop raised)."""

  def any_worker(self, flag: bool) -> bool:
    """Whether `flag` is True on any worker of the job (a collective every
    worker calls after the same loop); `flag` itself for one worker."""
    return flag


def train(trainer: LoopTrainer, policy, to_step: Optional[int]) -> int:
  """Trains until the global step reaches `to_step` (None: until the input
  ends) as `policy` says; returns the global step reached."""
  preemption.reclaim()  # TensorFlow may have taken SIGTERM over.
  step = trainer.global_step()
  policy.begin(step, to_step)
  trainer.begin()
  try:
    if policy.should_save_at_start(trainer.latest_checkpoint() is not None):
      if _save(trainer, policy, step):
        return step
    while to_step is None or step < to_step:
      preemption.reclaim()  # TensorFlow may have taken SIGTERM over.
      num_steps = policy.loop_steps(step)
      if trainer.max_loop_steps():
        num_steps = min(num_steps, trainer.max_loop_steps())
      result = trainer.train_loop(num_steps)
      step = trainer.global_step()
      preempted = _agreed_preemption(trainer)
      if len(result.losses) < num_steps and not result.stop:
        logging.info('Input ended at step %d: training stops there.', step)
        policy.request_stop()
      if result.stop:
        policy.request_stop()
      decision = policy.after_loop(step, result.losses, preempted=preempted)
      if decision.save and _save(trainer, policy, step):
        break
      if decision.stop:
        break
  finally:
    trainer.end()
  return step


def _agreed_preemption(trainer):
  """Whether to stop after this loop for SIGTERM: this worker's flag, read
  once, or any worker's (every worker reads and agrees at the same loop, so
  a SIGTERM arriving during the agreement counts at the next loop on all)."""
  local = preemption.requested()
  agree = getattr(trainer, 'any_worker', None)
  preempted = agree(local) if agree is not None else local
  if preempted and not local:
    preemption.request(peer=True)
  return preempted


def _save(trainer, policy, step):
  """A checkpoint at `step` after the policy's checks (no checkpoint with a
  NaN or Inf variable is written); True to stop."""
  policy.check_variables(trainer.finite_variables(), step)
  stop = trainer.save(step)
  policy.saved(step)
  return stop
