"""trainer/runtime/loop.py: the loop policy both runners follow."""

import logging

import numpy as np
import pytest

from trainer import config
from trainer.guard import nonfinite
from trainer.guard import preemption
from trainer.runtime import loop


class _Clock:

  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


def _policy(clock=None, **overrides):
  args = dict(save_every_steps=10, steps_per_loop=4, global_batch=8,
              train_steps=100, model_dir='/nonexistent')
  args.update(overrides)
  return loop.LoopPolicy(clock=clock or _Clock(), **args)


@pytest.mark.parametrize('name, value', [
    ('save_every_steps', 0), ('steps_per_loop', -1), ('global_batch', 1.5),
    ('train_steps', 0), ('save_every_secs', -1)])
def test_arguments_are_validated_by_name(name, value):
  message = rf'^`{name}` \({value}\) must be a positive'
  with pytest.raises(ValueError, match=message):
    _policy(**{name: value})


def test_arguments_are_keyword_only():
  with pytest.raises(TypeError):
    # pylint: disable-next=too-many-function-args
    loop.LoopPolicy(10, 4, 8, 100, '/m')


def test_begin_comes_first():
  with pytest.raises(RuntimeError, match='begin'):
    _policy().after_loop(4, [1.0])


def test_loops_end_at_saves_and_at_to_step():
  policy = _policy()
  policy.begin(0, 25)
  assert policy.loop_steps(0) == 4
  assert policy.loop_steps(8) == 2  # The save at 10.
  assert policy.loop_steps(23) == 2  # to_step.
  policy.begin(37, 100)  # Resumed after a preemption.
  assert policy.loop_steps(37) == 3


def test_saves_at_multiples_reached_or_passed_and_at_the_end():
  policy = _policy()
  policy.begin(0, 25)
  saves = []
  for step in (4, 8, 12, 16, 20, 24, 25):  # Loops that do not stop at 10.
    if policy.after_loop(step, [1.0]).save:
      policy.saved(step)
      saves.append(step)
  assert saves == [12, 20, 25]
  assert not policy.should_save(25)  # Saved already.


def test_sigterm_saves_the_current_step_and_stops():
  policy = _policy()
  with preemption.handling_sigterm():
    policy.begin(0, 100)
    assert policy.after_loop(4, [1.0]) == loop.LoopDecision(False, False)
    preemption.request()
    assert policy.after_loop(7, [1.0]) == loop.LoopDecision(True, True)


def test_non_finite_loss_names_its_step():
  policy = _policy()
  policy.begin(0, 100)
  with pytest.raises(nonfinite.NonFiniteLossError,
                     match='Loss is nan at step 7'):  # Steps 6-8.
    policy.after_loop(8, np.array([1.0, np.nan, np.inf], np.float32))
  with pytest.raises(nonfinite.NonFiniteLossError, match=r'step 9 \(w\)'):
    policy.check_variables({'w': False, 'b': True}, 9)


def test_progress_line_once_per_loop_of_steps_and_at_the_end(caplog):
  # The policy logs through absl's logger, whose own level TF may have set
  # (tf.saved_model.save leaves it at WARNING).
  caplog.set_level(logging.INFO, logger='absl')
  clock = _Clock()
  policy = _policy(clock)
  policy.begin(0, 10)
  lines = []
  for step in (2, 4, 6, 8, 10):
    clock.now += 1.0
    caplog.clear()
    policy.after_loop(step, [0.5])
    lines += [r.getMessage() for r in caplog.records]
  assert lines == [  # 2 steps per loop, a loop a second.
      'train | step: 4 | steps/sec: 2.0000 | examples/sec: 16.0000 | '
      'loss: 0.5000 | eta: 0:00:48',
      'train | step: 8 | steps/sec: 2.0000 | examples/sec: 16.0000 | '
      'loss: 0.5000 | eta: 0:00:46',
      'train | step: 10 | steps/sec: 2.0000 | examples/sec: 16.0000 | '
      'loss: 0.5000 | eta: 0:00:45']


def test_policy_for_params():
  policy = loop.policy_for(config.Config(
      save_checkpoints_steps=50, iterations_per_loop=25, train_batch_size=32,
      train_steps=200, model_dir='/m'))
  assert (policy.save_every_steps, policy.steps_per_loop) == (50, 25)


def test_seconds_cadence_saves_when_the_time_has_passed():
  clock = _Clock()
  policy = _policy(clock, save_every_steps=None, save_every_secs=30)
  policy.begin(0, 100)
  assert policy.loop_steps(0) == 4  # No step multiple to end a loop at.
  clock.now = 29.0
  assert not policy.after_loop(4, [1.0]).save
  clock.now = 30.0
  assert policy.after_loop(8, [1.0]).save
  policy.saved(8)
  clock.now = 40.0
  assert not policy.should_save(12)
  with pytest.raises(ValueError, match='cannot both be set'):
    _policy(save_every_secs=30)


def test_without_a_last_step_training_runs_until_stopped():
  policy = _policy(save_every_steps=None, train_steps=None,
                   global_batch=None)
  policy.begin(0, None)
  assert policy.loop_steps(1000) == 4
  assert not policy.after_loop(1000, [1.0]).save  # No cadence.
  policy.request_stop()  # E.g. the input ended.
  assert policy.after_loop(1003, [1.0]) == loop.LoopDecision(True, True)
  assert policy.replace(save_every_steps=5).save_every_steps == 5


def test_loops_sized_in_seconds_grow_to_the_budget(caplog):
  """loop_secs: TPUEstimator's iterations_per_loop='3s'. The first loop is
  one step; then as many as the mean step time fits in the budget, never
  past a save or to_step; each loop's time is logged as ElapsedTime."""
  clock = _Clock()
  policy = _policy(clock, save_every_steps=None, loop_secs=3,
                   train_steps=1000)
  policy.begin(0, 1000)
  step, sizes = 0, []
  with caplog.at_level(logging.INFO):
    for _ in range(4):
      steps = policy.loop_steps(step)
      sizes.append(steps)
      clock.now += 0.25 * steps  # 0.25 s a step.
      step += steps
      policy.after_loop(step, [1.0] * steps)
  assert sizes == [1, 12, 12, 12], sizes
  assert [r.getMessage() for r in caplog.records
          if r.getMessage().startswith('ElapsedTime')][:2] == [
              'ElapsedTime: 0.250', 'ElapsedTime: 3.000']
  assert policy.loop_steps(995) == 5  # to_step caps it.
  saving = _policy(clock, save_every_steps=10, loop_secs=3)
  saving.begin(0, 100)
  saving.loop_steps(0)
  clock.now += 0.25
  saving.after_loop(1, [1.0])
  assert saving.loop_steps(1) == 9  # The save at 10 caps it.


def test_policy_for_a_seconds_budget():
  policy = loop.policy_for(config.Config(
      iterations_per_loop=25, iterations_per_loop_secs=60, train_steps=200,
      train_batch_size=32, model_dir='/m'))
  assert (policy.loop_secs, policy.steps_per_loop) == (60, 25)
  assert loop.policy_for(config.Config(model_dir='/m')).loop_secs is None
