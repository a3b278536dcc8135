"""trainer/runtime/modes.py's outer loop with a fake runner: it reads the
Config, and the evaluation steps come from the caller (the front end's
input), resolved once, only where the mode evaluates."""

from trainer import config as config_lib
from trainer.runtime import modes


class FakeRunner:
  """Steps, checkpoints and evaluations of a Runner, recorded."""

  def __init__(self, step=0):
    self.step = step
    self.evaluated = []

  def global_step(self):
    return self.step

  def latest_checkpoint(self):
    return f'model.ckpt-{self.step}' if self.step else None

  def train(self, to_step):
    self.step = to_step

  def evaluate(self, steps):
    self.evaluated.append(steps)
    return {'loss': 1.0, 'global_step': self.step}


def test_eval_steps_are_resolved_once_where_the_mode_evaluates(tmp_path):
  calls = []

  def eval_steps():
    calls.append(len(calls))
    return 7

  config = config_lib.Config(mode='train', train_steps=20,
                             model_dir=str(tmp_path))
  runner = FakeRunner()
  assert modes.run(runner, config, eval_steps=eval_steps) == {
      'global_step': 20}
  assert not calls  # Training alone never asks (synthetic input raises).
  config = config.replace(mode='train_and_evaluate', train_steps=30,
                          steps_per_eval=5)
  metrics = modes.run(runner, config, eval_steps=eval_steps)
  assert calls == [0]
  assert runner.evaluated == [7, 7]  # At steps 25 and 30.
  assert metrics == {'loss': 1.0, 'global_step': 30}


def test_without_a_resolver_the_steps_are_the_flag_or_the_whole_input(
    tmp_path):
  runner = FakeRunner(step=5)
  config = config_lib.Config(mode='evaluate', model_dir=str(tmp_path))
  modes.run(runner, config)
  modes.run(runner, config.replace(eval_steps=3))
  assert runner.evaluated == [None, 3]
