"""The tf2 runner's replay of SessionRunHooks matches a real session's."""

import collections

import pytest
import tensorflow as tf

from input_fn import inputs
from tests import testutil
from trainer.compat import tf_private
from trainer.runners.estimator import runner as estimator_runner
from trainer.engines.tf2 import engine as tf2_engine
from trainer.engines.tf2 import hook_runner as hooks_lib
from trainer.models import builtin

_v1 = tf.compat.v1


class _Recorder(_v1.train.SessionRunHook):
  """Records, per step: the global step session.run gives in before_run,
  the fetched step read, the session's global step in after_run; asks to
  stop once the step reaches `stop_at`."""

  def __init__(self, stop_at=None):
    self._stop_at = stop_at
    self.records = []

  def begin(self):
    self._read = tf_private.global_step_read()  # What Estimator's hooks use.

  def before_run(self, run_context):
    self._before = int(run_context.session.run(self._read))
    return _v1.train.SessionRunArgs({'read': [self._read]})

  def after_run(self, run_context, run_values):
    after = int(run_context.session.run(self._read))
    self.records.append(
        (self._before, int(run_values.results['read'][0]), after))
    if self._stop_at is not None and after >= self._stop_at:
      run_context.request_stop()


def _params(tmp_path, runner):
  return testutil.base_config(model_dir=str(tmp_path / runner), runner=runner,
                              iterations_per_loop=2, train_steps=5,
                              save_checkpoints_steps=100)


def test_hooks_see_each_step_as_in_a_session(tmp_path):
  recorder = _Recorder()
  runner = tf2_engine.Tf2Engine(_params(tmp_path, 'tf2'),
                                builtin.model_fn('mlp'),
                                inputs.INPUT_FNS['tfrecord'])
  runner.train(5, hooks=[recorder])
  assert recorder.records == [(k, k, k + 1) for k in range(5)]


@testutil.requires_estimator
def test_estimator_hooks_see_the_same_steps(tmp_path):
  recorder = _Recorder()
  runner = estimator_runner.EstimatorRunner(_params(tmp_path, 'estimator'),
                                            builtin.model_fn('mlp'),
                                            inputs.INPUT_FNS['tfrecord'])
  runner.estimator.train(
      lambda params: inputs.INPUT_FNS['tfrecord'](dict(params, mode='train')),
      max_steps=5, hooks=[recorder])
  # A TF1 session orders the fetched read before the step's increment only
  # by data dependency, which Estimator's increment lacks: it usually reads
  # k, sometimes k + 1 (step 4 fetched 5 once, under Bazel).
  assert [(b, a) for b, _, a in recorder.records] == [
      (k, k + 1) for k in range(5)]
  assert all(b <= fetched <= a for b, fetched, a in recorder.records)


def test_request_stop_ends_training_after_the_loop(tmp_path):
  recorder = _Recorder(stop_at=3)
  runner = tf2_engine.Tf2Engine(_params(tmp_path, 'tf2'),
                                builtin.model_fn('mlp'),
                                inputs.INPUT_FNS['tfrecord'])
  runner.train(5, hooks=[recorder])
  # With a user hook the runner runs one step a loop off TPU, as Estimator
  # runs hooks after every session.run: it stops at the hook's step.
  assert [after for _, _, after in recorder.records] == [1, 2, 3]
  assert runner.global_step() == 3


_Pair = collections.namedtuple('_Pair', 'a b')


@pytest.mark.parametrize('fetches', [
    None, 1, [1, 2], (1, [2, {'x': 3}]), {'b': 1, 'a': (2, None)},
    _Pair(1, [2]), collections.OrderedDict(z=1, y=2), [],
])
def test_map_fetches_is_nest_map_structure(fetches):
  double = lambda x: None if x is None else 2 * x
  expected = tf.nest.map_structure(double, fetches)
  result = hooks_lib.map_fetches(double, fetches)
  assert result == expected and type(result) is type(expected)
