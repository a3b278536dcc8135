"""trainer/runtime/driver.py: the loop driver, in-process with a fake trainer
(as orbit/controller_test.py tests Orbit's Controller): no TensorFlow runs."""

import math

import pytest

from trainer.guard import nonfinite
from trainer.guard import preemption
from trainer.runtime import driver
from trainer.runtime import loop


class FakeTrainer:
  """A LoopTrainer whose steps are counters: records what it was asked."""

  def __init__(self, step=0, checkpoint=None, input_steps=math.inf,
               loss=1.0, stop_at=None, listener_stop_at=None,
               max_loop_steps=None, finite=True):
    self.step = step
    self.checkpoint = checkpoint
    self.input_steps = input_steps  # Steps the input has left.
    self.loss = loss
    self.stop_at = stop_at  # A hook asks to stop after reaching it.
    self.listener_stop_at = listener_stop_at
    self._max_loop_steps = max_loop_steps
    self.finite = finite
    self.calls = []

  def global_step(self):
    return self.step

  def latest_checkpoint(self):
    return self.checkpoint

  def begin(self):
    self.calls.append(('begin', self.step))

  def max_loop_steps(self):
    return self._max_loop_steps

  def train_loop(self, num_steps):
    ran = int(min(num_steps, self.input_steps))
    self.input_steps -= ran
    self.step += ran
    self.calls.append(('loop', num_steps, ran))
    return driver.LoopResult(
        losses=[self.loss] * ran,
        stop=self.stop_at is not None and self.step >= self.stop_at)

  def finite_variables(self):
    return {'w': self.finite}

  def save(self, step):
    self.checkpoint = f'ckpt-{step}'
    self.calls.append(('save', step))
    return self.listener_stop_at is not None and step >= self.listener_stop_at

  def end(self):
    self.calls.append(('end', self.step))

  def saves(self):
    return [c[1] for c in self.calls if c[0] == 'save']

  def loops(self):
    return [c[1] for c in self.calls if c[0] == 'loop']


def _policy(**overrides):
  args = dict(save_every_steps=10, steps_per_loop=4, global_batch=8,
              train_steps=None, model_dir='/nonexistent')
  args.update(overrides)
  return loop.LoopPolicy(**args)


def test_saves_at_start_at_the_cadence_and_at_the_end():
  trainer = FakeTrainer()
  assert driver.train(trainer, _policy(), 25) == 25
  assert trainer.saves() == [0, 10, 20, 25]
  # Loops end at each multiple of the cadence and at the last step.
  assert trainer.loops() == [4, 4, 2, 4, 4, 2, 4, 1]
  assert trainer.calls[0] == ('begin', 0) and trainer.calls[-1] == ('end', 25)


def test_resuming_from_a_checkpoint_does_not_save_at_the_start():
  trainer = FakeTrainer(step=10, checkpoint='ckpt-10')
  driver.train(trainer, _policy(), 14)
  assert trainer.saves() == [14]


def test_the_end_of_the_input_stops_training_with_a_checkpoint():
  trainer = FakeTrainer(input_steps=6)
  assert driver.train(trainer, _policy(), None) == 6
  assert trainer.saves() == [0, 6]
  assert trainer.loops() == [4, 4]


def test_a_hook_stop_ends_training_after_its_loop_with_a_checkpoint():
  trainer = FakeTrainer(stop_at=5)
  assert driver.train(trainer, _policy(), 100) == 8
  assert trainer.saves() == [0, 8]


def test_a_saver_listener_stops_training_at_its_checkpoint():
  trainer = FakeTrainer(listener_stop_at=10)
  assert driver.train(trainer, _policy(), 100) == 10
  assert trainer.saves() == [0, 10]


def test_the_trainers_bound_limits_every_loop():
  trainer = FakeTrainer(max_loop_steps=1)
  driver.train(trainer, _policy(), 3)
  assert trainer.loops() == [1, 1, 1]


def test_sigterm_stops_after_the_loop_with_a_checkpoint(monkeypatch):
  trainer = FakeTrainer()
  monkeypatch.setattr(preemption, 'requested', lambda: trainer.step >= 6)
  assert driver.train(trainer, _policy(), 100) == 8
  assert trainer.saves() == [0, 8]


def test_a_nan_loss_stops_before_any_checkpoint_of_it():
  trainer = FakeTrainer(step=4, checkpoint='ckpt-4', loss=float('nan'))
  with pytest.raises(nonfinite.NonFiniteLossError, match='step 5'):
    driver.train(trainer, _policy(), 100)
  assert trainer.saves() == [] and trainer.calls[-1] == ('end', 8)


def test_no_checkpoint_of_non_finite_variables():
  trainer = FakeTrainer(finite=False)
  with pytest.raises(nonfinite.NonFiniteLossError):
    driver.train(trainer, _policy(), 100)
  assert trainer.saves() == []
