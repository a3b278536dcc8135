"""A user's SessionRunHook under a MirroredStrategy of two on the tf2 runner:
it runs inside the loop after each step, so its request_stop() ends training
at that step as a Session's would, and it sees the first replica's fetches.
"""

import tensorflow as tf

from tests import testutil
from tests.engines import hook_programs
from tests.legacy import digits_cnn
from trainer.runners import registry as runners


def check_stop_under_mirrored(model_dir):
  """Under a MirroredStrategy of two: the hook's stop ends the loop at its
  step and its fetches are the first replica's, one per step."""
  params = testutil.base_config(
      model_dir=model_dir, runner='tf2', iterations_per_loop=10,
      train_steps=50, save_checkpoints_steps=50, train_batch_size=16,
      num_cpu_devices=2)
  runner = runners.make_runner(params, hook_programs.model_fn(),
                               digits_cnn.train_input_fn)
  loops = hook_programs.count_loops(runner)
  stop = hook_programs.StopAfterHook(last=4)
  recording = hook_programs.RecordingHook(tf.constant(1.5))
  runner.train(50, hooks=[recording, stop])
  assert loops == [10], loops
  assert testutil.latest_step(model_dir) == 5
  assert recording.seen == [(step, 1.5) for step in range(5)], recording.seen


def test_a_hooks_stop_under_a_mirrored_strategy(tmp_path):
  testutil.call_on_cpu_devices(2, check_stop_under_mirrored,
                               str(tmp_path / 'mirrored'))
