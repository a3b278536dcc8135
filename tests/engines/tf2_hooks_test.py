"""SessionRunHooks and Scaffolds of a legacy model_fn under both runners.

The model_fn below is written as Estimator-era code writes hooks: a
StopAtStepHook and a hook of its own that fetches tensors in before_run and
reads them in after_run. Under the tf2 runner the fetches are outputs of the
step; what needs a real Session is refused with an error naming the hook.
"""

import pytest
import tensorflow as tf

from tests import testutil
from tests.engines import hook_programs
from tests.legacy import digits_cnn
from trainer.runners import registry as runners
from trainer.engines.tf2 import model_fn_adapter
from trainer.engines.tf2 import scaffold as scaffold_lib
from trainer.engines.tf2 import hook_runner as hooks_lib

v1 = tf.compat.v1
_model_fn = hook_programs.model_fn
RUNNERS = [pytest.param('estimator', marks=testutil.requires_estimator), 'tf2']


class SessionRunningHook(v1.train.SessionRunHook):
  """Runs a tensor it never fetched through the session: needs a Session."""

  def __init__(self, tensor):
    self._tensor = tensor

  def after_run(self, run_context, run_values):
    run_context.session.run(self._tensor)


def _runner(tmp_path, kind, model_fn, train_steps=50):
  params = testutil.base_config(
      model_dir=str(tmp_path / kind), runner=kind, iterations_per_loop=10,
      train_steps=train_steps, save_checkpoints_steps=train_steps,
      train_batch_size=16)
  return runners.make_runner(params, model_fn, digits_cnn.train_input_fn)


@pytest.mark.parametrize('kind', RUNNERS)
def test_stop_at_step_hook_ends_training_early(tmp_path, kind):
  model_fn = _model_fn(lambda loss, _: [v1.train.StopAtStepHook(last_step=7)])
  runner = _runner(tmp_path, kind, model_fn)
  runner.train(50)
  step = testutil.latest_step(str(tmp_path / kind))
  # Hooks run after every step off TPU, as Estimator's after every
  # session.run: StopAtStepHook stops at its step, not at the loop's end.
  assert step == 7, step


def test_hook_fetches_reach_after_run_every_step(tmp_path):
  made = []

  def make_hooks(loss, _):
    made.append(hook_programs.RecordingHook(loss))
    return made[-1:]

  runner = _runner(tmp_path, 'tf2', _model_fn(make_hooks), train_steps=20)
  runner.train(20)
  seen = made[-1].seen
  # global_step as the step read it (before its increment), one per step.
  assert [step for step, _ in seen] == list(range(20)), seen
  losses = [loss for _, loss in seen]
  assert all(loss > 0 for loss in losses)
  assert losses[-1] < losses[0], losses


def test_hook_that_needs_a_session_is_refused_by_name(tmp_path):
  model_fn = _model_fn(lambda loss, logits: [SessionRunningHook(logits)])
  runner = _runner(tmp_path, 'tf2', model_fn, train_steps=10)
  with pytest.raises(hooks_lib.HookNeedsSessionError,
                     match='SessionRunningHook'):
    runner.train(10)


@pytest.mark.parametrize('make_hook, match', [
    (lambda loss, logits: v1.train.ProfilerHook(save_steps=1,
                                                output_dir='/nonexistent'),
     'ProfilerHook traces session.run calls .* tf.profiler.experimental'),
    (lambda loss, logits: v1.train.FinalOpsHook({'loss': loss}),
     'FinalOpsHook runs .* after the last step'),
])
def test_session_only_hooks_are_refused_before_the_first_step(
    tmp_path, make_hook, match):
  model_fn = _model_fn(lambda loss, logits: [make_hook(loss, logits)])
  runner = _runner(tmp_path, 'tf2', model_fn, train_steps=10)
  with pytest.raises(hooks_lib.HookNeedsSessionError, match=match):
    runner.train(10)
  assert (testutil.latest_step(str(tmp_path / 'tf2')) or 0) == 0


def test_final_ops_hook_over_variables_reads_their_final_values(tmp_path):
  made = []

  def make_hooks(loss, _):
    made.append(v1.train.FinalOpsHook(
        {'step': v1.train.get_global_step()}))
    return made[-1:]

  runner = _runner(tmp_path, 'tf2', _model_fn(make_hooks), train_steps=6)
  runner.train(6)
  assert int(made[-1].final_ops_values['step']) == 6


def test_the_launchers_guard_hooks_keep_loops_of_several_steps(tmp_path):
  """The launcher adds StopOnSignalHook and StepRecorderHook to every
  train(): they must not cut the tf2 runner's loops to one step (under a
  strategy that made every step a loop: 0.5x the Estimator's steps/s);
  nor does a hook of the user's, which runs inside the loop."""
  from trainer.guard import session_hooks  # pylint: disable=g-import-not-at-top
  runner = _runner(tmp_path, 'tf2', _model_fn(), train_steps=20)
  loops = hook_programs.count_loops(runner)
  recorder = session_hooks.StepRecorderHook()
  runner.train(20, hooks=[session_hooks.StopOnSignalHook(), recorder])
  assert loops == [10, 10], loops
  assert recorder.step == 19  # Replayed: the last step's read.
  loops.clear()
  recording = hook_programs.RecordingHook(tf.constant(0.0))
  runner.train(24, hooks=[recorder, recording])
  assert loops == [4], loops
  assert [step for step, _ in recording.seen] == [20, 21, 22, 23]


class HookFailure(Exception):
  """What a user's hook raises."""


class FailingHook(v1.train.SessionRunHook):
  """Raises HookFailure in the after_run of the step that read `step`."""

  def __init__(self, step):
    self._at = step

  def begin(self):
    self._step = v1.train.get_global_step()

  def before_run(self, run_context):
    return v1.train.SessionRunArgs(self._step)

  def after_run(self, run_context, run_values):
    if int(run_values.results) == self._at:
      raise HookFailure(f'failed at {self._at}')


@pytest.mark.parametrize('kind', RUNNERS)
def test_a_hooks_stop_ends_a_loop_of_several_steps_at_its_step(tmp_path,
                                                               kind):
  hook = hook_programs.StopAfterHook(last=5)
  runner = _runner(tmp_path, kind, _model_fn(lambda *_: [hook]),
                   train_steps=50)
  loops = hook_programs.count_loops(runner) if kind == 'tf2' else []
  runner.train(50)
  # A Session stops after the run whose after_run asked: step 6 (the step
  # read 5), checkpointed there, after six after_runs.
  assert testutil.latest_step(str(tmp_path / kind)) == 6
  assert hook.after_runs == 6
  if kind == 'tf2':
    assert loops == [10], loops  # One loop, stopped inside.


@pytest.mark.parametrize('kind', RUNNERS)
def test_a_hooks_exception_reaches_the_caller_as_raised(tmp_path, kind):
  runner = _runner(tmp_path, kind, _model_fn(lambda *_: [FailingHook(3)]),
                   train_steps=50)
  with pytest.raises(HookFailure, match='failed at 3'):
    runner.train(50)
  # Nothing trained past the failure was written.
  assert (testutil.latest_step(str(tmp_path / kind)) or 0) == 0


def test_scaffold_init_op_of_initializers_is_what_already_happened(tmp_path):
  def scaffold():  # Estimator's default init_op, written out by users.
    return v1.train.Scaffold(init_op=tf.group(
        v1.global_variables_initializer(), v1.local_variables_initializer()))

  runner = _runner(tmp_path, 'tf2', _model_fn(scaffold=scaffold),
                   train_steps=10)
  runner.train(10)
  assert testutil.latest_step(str(tmp_path / 'tf2')) == 10


def test_scaffold_init_op_that_assigns_in_the_model_fn_is_refused(tmp_path):
  def scaffold():
    kernel = [v for v in v1.global_variables() if 'kernel' in v.name][0]
    return v1.train.Scaffold(init_op=kernel.assign(tf.zeros_like(kernel)).op)

  runner = _runner(tmp_path, 'tf2', _model_fn(scaffold=scaffold),
                   train_steps=10)
  with pytest.raises(scaffold_lib.ScaffoldError, match='init_op'):
    runner.train(10)


class CallCounter(v1.train.SessionRunHook):
  """Counts each method's calls, in order."""

  def __init__(self):
    self.calls = []

  def begin(self):
    self.calls.append('begin')

  def after_create_session(self, session, coord):
    self.calls.append('after_create_session')

  def before_run(self, run_context):
    self.calls.append('before_run')

  def after_run(self, run_context, run_values):
    self.calls.append('after_run')

  def end(self, session):
    self.calls.append('end')


def test_hooks_are_called_as_a_monitored_session_calls_them(tmp_path):
  # The conformance matrix compares the order with the real Estimator's.
  hook = CallCounter()
  runner = _runner(tmp_path, 'tf2', _model_fn(), train_steps=12)
  runner.train(12, hooks=[hook])
  assert hook.calls == (['begin', 'after_create_session'] +
                        ['before_run', 'after_run'] * 12 + ['end']), hook.calls


def test_scaffold_init_fn_restores_with_a_saver_made_in_the_model_fn(
    tmp_path):
  base = _runner(tmp_path, 'tf2', _model_fn(), train_steps=10)
  base.train(10)
  base_path = v1.train.latest_checkpoint(str(tmp_path / 'tf2'))
  trained = base.variables()

  def scaffold():  # slim.assign_from_checkpoint_fn's way of warm-starting.
    saver = v1.train.Saver(v1.trainable_variables())
    return v1.train.Scaffold(
        init_fn=lambda _, session: saver.restore(session, base_path))

  warm = _runner(tmp_path / 'warm', 'tf2', _model_fn(scaffold=scaffold),
                 train_steps=1)
  warm.train(0)
  restored = {name: value for name, value in warm.variables().items()
              if name.startswith('dense/')}
  assert sorted(restored) == ['dense/bias', 'dense/kernel'], restored
  for name, value in restored.items():
    assert (value == trained[name]).all(), name


def test_a_tensor_initializer_with_no_constant_value_is_refused_by_name(
    tmp_path):
  def model_fn(features, labels, mode, params):
    noise = tf.random.uniform([64, 10])
    kernel = v1.get_variable('noisy/kernel', initializer=noise)
    logits = tf.matmul(tf.reshape(features, [-1, 64]) / 255.0, kernel)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

  runner = _runner(tmp_path, 'tf2', model_fn, train_steps=2)
  with pytest.raises(model_fn_adapter.TensorInitializerError,
                     match='noisy/kernel'):
    runner.train(2)
