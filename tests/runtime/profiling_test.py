"""--profile_steps writes a TensorBoard profile under both runners."""

import glob
import os

import pytest

from input_fn import inputs
from tests import testutil
from trainer.runners.estimator import runner as estimator_runner
from trainer.engines.tf2 import engine as tf2_engine
from trainer.runtime import profiling
from trainer.models import builtin


def _profiles(model_dir):
  return glob.glob(os.path.join(model_dir, 'plugins', 'profile', '*',
                                '*.xplane.pb'))


def _params(tmp_path, runner, profile_steps):
  return testutil.base_config(
      model_dir=str(tmp_path / runner), runner=runner, iterations_per_loop=2,
      train_steps=6, save_checkpoints_steps=100, profile_steps=profile_steps)


class _Recorder:
  """A stand-in for tf.profiler.experimental: records start and stop."""

  def __init__(self):
    self.calls = []

  def start(self, logdir):
    self.calls.append(('start', logdir))

  def stop(self):
    self.calls.append(('stop',))


@pytest.fixture
def recorder(monkeypatch):
  recorded = _Recorder()
  monkeypatch.setattr(profiling.tf.profiler, 'experimental', recorded)
  return recorded


def test_window_starts_and_stops_at_the_units_holding_the_steps(recorder):
  window = profiling.StepWindow('/dir', [3, 5])
  calls = []
  for step in range(0, 8, 2):  # Loops of 2 steps: 0-2, 2-4, 4-6, 6-8.
    window.before_steps(step, 2)
    calls.append(len(recorder.calls))
    window.after_steps(step + 2)
  # Starts before the loop 2-4 (holds step 3), stops after 4-6 (reaches 5).
  assert recorder.calls == [('start', '/dir'), ('stop',)]
  assert calls == [0, 1, 1, 2]


def test_window_stops_when_training_ends_first(recorder):
  window = profiling.StepWindow('/dir', [1, 100])
  window.before_steps(0, 2)
  window.after_steps(2)
  window.stop(2)
  window.before_steps(2, 2)  # A later train() call: profiled once only.
  assert recorder.calls == [('start', '/dir'), ('stop',)]


def test_no_window_never_profiles(recorder):
  window = profiling.StepWindow('/dir', [])
  window.before_steps(0, 10)
  window.stop(10)
  assert not recorder.calls


def test_tf2_runner_writes_a_profile(tmp_path):
  params = _params(tmp_path, 'tf2', [2, 4])
  runner = tf2_engine.Tf2Engine(params, builtin.model_fn('mlp'),
                                inputs.INPUT_FNS['tfrecord'])
  runner.train(6)
  profiles = _profiles(params.model_dir)
  assert len(profiles) == 1
  with open(profiles[0], 'rb') as f:
    assert b'train_loop' in f.read()  # The loop's tf.function ran in it.


@testutil.requires_estimator
def test_estimator_runner_writes_a_profile(tmp_path):
  params = _params(tmp_path, 'estimator', [2, 4])
  runner = estimator_runner.EstimatorRunner(
      params, builtin.model_fn('mlp'), inputs.INPUT_FNS['tfrecord'])
  runner.train(6)
  assert len(_profiles(params.model_dir)) == 1
