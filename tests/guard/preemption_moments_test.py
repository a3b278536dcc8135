"""SIGTERM at any moment of a run (issue 19), with and without a CPU hog.

Each trial starts `trainer.main --mode=train_and_evaluate` (evaluations and
periodic checkpoints every 30 steps, so a signal may land in start-up,
tracing, a checkpoint write, training or an evaluation) and sends SIGTERM at
a seeded random time after the start (TEST_SEED repeats a run; the times are
printed). Whatever the moment, the trainer must either have had nothing to
save (killed by the signal before its handler, or stopped before a first
checkpoint) or stop with exit 143 and a checkpoint at the step it reports;
never exit 0, never leave an unreadable checkpoint; a restart then trains on
from the latest checkpoint.
"""

import contextlib
import random
import re
import signal
import subprocess
import sys
import pytest
import tensorflow as tf

from tests import testutil
from trainer.guard import preemption

# (what the delay counts from, CPU hog on): start-up and tracing; then
# training, evaluations and checkpoint writes, idle and loaded.
TRIALS = (('start', False), ('training', True), ('training', False))
SPREAD_SECONDS = {'start': 8.0, 'training': 3.0}


@contextlib.contextmanager
def cpu_hog(busy):
  """Both cores kept busy by two spinning processes, for the block."""
  hogs = [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
          for _ in range(2 if busy else 0)]
  try:
    yield
  finally:
    for hog in hogs:
      hog.kill()
      hog.wait()


def _args(model_dir, runner, train_steps):
  return [f'--model_dir={model_dir}', f'--runner={runner}',
          '--mlp_hidden_units=8', '--train_batch_size=32',
          '--eval_batch_size=32', '--iterations_per_loop=10',
          '--save_checkpoints_steps=30', '--steps_per_eval=30',
          '--eval_steps=3', f'--train_steps={train_steps}']


def _sigterm_after(args, anchor, delay, out_path, log_path):
  """Starts the trainer and sends SIGTERM `delay` s after `anchor` (the
  start, or its first training progress line), unless it ended first;
  (exit status, log)."""
  process = testutil.start_main(args, log_path, out_path)
  try:
    if anchor == 'training':
      testutil.wait_for_training(process, log_path)
    try:
      process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
      process.send_signal(signal.SIGTERM)
    process.wait(timeout=testutil.HANG_TIMEOUT)
  finally:
    if process.poll() is None:
      process.kill()
  with open(log_path) as f:
    return process.returncode, f.read()


@pytest.mark.parametrize('runner', [
    pytest.param('estimator', marks=testutil.requires_estimator),
    # The tf2 runner's SIGTERM path does not depend on the TF version: the
    # modern lane signals it; the legacy lane spends its time on the
    # estimator's.
    pytest.param('tf2', marks=pytest.mark.skipif(
        testutil.HAS_ESTIMATOR, reason='signalled on the modern lane'))])
def test_sigterm_at_any_moment_stops_with_a_checkpoint_or_nothing(
    tmp_path, runner):
  rng = random.Random(testutil.seed_from_env())
  for trial, (anchor, busy) in enumerate(TRIALS):
    delay = rng.uniform(0.0, SPREAD_SECONDS[anchor])
    model_dir = tmp_path / f'trial{trial}'
    with cpu_hog(busy):
      status, log = _sigterm_after(
          _args(model_dir, runner, 100000), anchor, delay,
          tmp_path / f'trial{trial}.out', tmp_path / f'trial{trial}.log')
    step = testutil.latest_step(str(model_dir))
    print(f'trial {trial}: SIGTERM {delay:.2f} s after its {anchor}, cpu hog '
          f'{busy}: exit {status}, latest checkpoint at step {step}')
    assert status != 0, log[-3000:]  # 100000 steps never finish in time.
    if step is not None:  # Whatever was written reads back whole.
      reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(
          str(model_dir)))
      assert reader.get_tensor('global_step') == step
    stopped = re.search(r'Preempted \(SIGTERM\): stopped at step (\d+)', log)
    if status == preemption.EXIT_STATUS and stopped:
      assert int(stopped.group(1)) == step, log[-3000:]
    else:  # Nothing had started: killed before the handler, or no step yet.
      assert status in (-signal.SIGTERM, preemption.EXIT_STATUS), log[-3000:]
      assert step is None or 'Preempted' not in log, log[-3000:]
    resumed = testutil.run_main(_args(model_dir, runner, (step or 0) + 10) +
                                ['--mode=train'])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert testutil.latest_step(str(model_dir)) == (step or 0) + 10
