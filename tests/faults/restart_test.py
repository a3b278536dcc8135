"""Signals and kills at every moment of a run, on both paths, each followed
by a restart: exit status and message, a checkpoint at the step a signal
stopped, every checkpoint left loads, the latest never goes back, and the
last restart ends where an uninterrupted run ends, with the same metrics;
a run after a SIGKILL takes over the killed run's stale lock, saying so.

Each moment is found by the log line that starts it (faultutil.Path.
moments), plus a random delay of up to 20 ms; the seed is printed
(TEST_SEED=N repeats it).
"""

import random
import re
import signal
import time

import numpy as np
import pytest

from tests import testutil
from tests.faults import cases
from tests.faults import faultutil

# (case, moment, signals, exit status): run in this order, each from where
# the one before left the model_dir.
CHAIN = [
    ('SIGKILL at start-up', 'start-up', [signal.SIGKILL], -signal.SIGKILL),
    ('SIGTERM mid-training', 'mid-step', [signal.SIGTERM],
     cases.exit_status('sigterm')),
    ('SIGINT mid-training', 'mid-step', [signal.SIGINT],
     cases.exit_status('sigint')),
    ('SIGINT twice', 'mid-step', [signal.SIGINT, signal.SIGINT], 130),
    ('SIGKILL mid-step', 'mid-step', [signal.SIGKILL], -signal.SIGKILL),
    ('SIGKILL mid-save', 'mid-save', [signal.SIGKILL], -signal.SIGKILL),
    ('SIGKILL mid-eval', 'mid-eval', [signal.SIGKILL], -signal.SIGKILL),
]
_STOPPED = re.compile('|'.join(
    f'({cases.pattern(key, STEP="__STEP__")})'.replace('__STEP__', r'(\d+)')
    for key in ('sigterm', 'sigint')) + '|' + cases.pattern('second-signal'))


def _interrupt(path, model_dir, data_dir, log, moment, signals, rng):
  """Starts a run, signals it at `moment`; (exit status, seconds from the
  first signal to the exit, the run's log, its pid)."""
  process = faultutil.start(path.command(model_dir, data_dir), log)
  try:
    faultutil.wait_for_after(process, log, path.moments[moment])
    time.sleep(rng.uniform(0, 0.02))
    sent = time.monotonic()
    for i, signum in enumerate(signals):
      if i:
        time.sleep(0.01)
      process.send_signal(signum)
    status = faultutil.finish(process)
  finally:
    if process.poll() is None:
      process.kill()
  with open(log) as f:
    return status, time.monotonic() - sent, f.read(), process.pid


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_signals_and_kills_then_restart(path_name, fault_data, reference,
                                        tmp_path):
  path = faultutil.PATHS[path_name]
  _, expected = reference(path)
  model_dir = str(tmp_path / 'model')
  record = faultutil.Record(path.name)
  rng = random.Random(testutil.seed_from_env())
  chain = list(CHAIN)
  if path.name == 'launcher':  # train_and_evaluate exports after each eval.
    chain.append(('SIGKILL mid-export', 'mid-export', [signal.SIGKILL],
                  -signal.SIGKILL))
  latest = 0
  killed = None  # The pid of a run SIGKILLed while it held the lock.
  for i, (case, moment, signals, expected_status) in enumerate(chain):
    status, seconds, log, pid = _interrupt(path, model_dir, fault_data,
                                           str(tmp_path / f'run{i}.log'),
                                           moment, signals, rng)
    assert status == expected_status, f'{case}: exit {status}\n{log[-3000:]}'
    if killed:  # Its lock record is stale: taken over, with a warning.
      assert re.search(cases.pattern('stale-lock', MODEL_DIR=model_dir,
                                     PID=killed), log), case
    killed = pid if moment != 'start-up' and (
        signals == [signal.SIGKILL]) else None
    message = ''
    if expected_status > 0:
      stopped = _STOPPED.search(log)
      assert stopped, f'{case}: no stop message\n{log[-3000:]}'
      message = stopped.group(0)
      step_stopped = stopped.group(2) or stopped.group(4)
      if step_stopped:  # (A second signal may end it before a save.)
        assert faultutil.latest_step(model_dir) == int(step_stopped), (
            f'{case}: no checkpoint at the step it stopped')
    # (A SIGKILL mid-save may leave the newer .index cut short: the next
    # start moves it aside, and every checkpoint loads after the last.)
    faultutil.assert_every_checkpoint_loads(
        model_dir, listed_only=signals[-1] == signal.SIGKILL)
    step = faultutil.latest_step(model_dir)
    assert step >= latest, f'{case}: latest checkpoint went {latest} -> {step}'
    print(f'{case}: exit {status} in {seconds:.2f} s, latest checkpoint '
          f'{step}, left {faultutil.leftovers(model_dir) or "no temp files"}')
    record.add(case, status, seconds, message, True)
    latest = step

  result, seconds = faultutil.run(path.command(model_dir, fault_data))
  assert result.returncode == 0, result.stderr[-3000:]
  if killed:
    assert re.search(cases.pattern('stale-lock', MODEL_DIR=model_dir,
                                   PID=killed), result.stderr)
  assert faultutil.latest_step(model_dir) == 400
  assert not faultutil.leftovers(model_dir)
  faultutil.assert_every_checkpoint_loads(model_dir)
  metrics = path.final_metrics(result.stdout)
  np.testing.assert_allclose(
      [metrics[k] for k in sorted(expected)],
      [expected[k] for k in sorted(expected)], rtol=1e-4,
      err_msg=f'final metrics {metrics} differ from an uninterrupted run '
      f'{expected}')
  record.add('restart after all of them', result.returncode, seconds,
             'final metrics equal an uninterrupted run', True)
