"""The launcher's guarantees on the facade's tf2 runner: a program whose
RunConfig.train_distribute is a MirroredStrategy of 2 replicas, stopped
by SIGTERM then SIGINT, checkpoints the step it stopped at, exits 143 /
130, and its restart ends with an uninterrupted run's metrics.

On TF 2.15 the real Estimator hangs at its first session.run with a
MirroredStrategy over logical CPU devices (measured), so this runs on the
modern lane only."""

import re
import signal

import numpy as np
import pytest

from tests import testutil
from tests.faults import cases
from tests.faults import faultutil

_REPLICAS = ['--replicas=2']


@pytest.mark.skipif(testutil.HAS_ESTIMATOR, reason='the real Estimator '
                    'hangs with MirroredStrategy over logical CPUs')
def test_two_replicas_stop_on_signals_and_restart(fault_data, tmp_path):
  path = faultutil.LAUNCHER
  record = faultutil.Record('launcher, 2 replicas (tf2 runner)')
  reference, _ = faultutil.run(path.command(
      tmp_path / 'reference', fault_data, *_REPLICAS, train_steps=200))
  assert reference.returncode == 0, reference.stderr[-3000:]
  model_dir = str(tmp_path / 'model')
  for key, signum in (('sigterm', signal.SIGTERM), ('sigint', signal.SIGINT)):
    log = str(tmp_path / f'{key}.log')
    process = faultutil.start(path.command(model_dir, fault_data, *_REPLICAS,
                                           train_steps=200), log)
    faultutil.wait_for_after(
        process, log, r'Saving checkpoints for [1-9]\d* into',
        offset=0)
    process.send_signal(signum)
    status = faultutil.finish(process)
    with open(log) as f:
      text = f.read()
    assert status == cases.exit_status(key), text[-3000:]
    stopped = re.search(cases.pattern(key, STEP='__STEP__').replace(
        '__STEP__', r'(\d+)'), text)
    assert stopped, text[-3000:]
    assert faultutil.latest_step(model_dir) == int(stopped.group(1))
    faultutil.assert_every_checkpoint_loads(model_dir)
    record.add(f'{key.upper()} mid-training', status, 0, stopped.group(0),
               True)
  result, seconds = faultutil.run(path.command(model_dir, fault_data,
                                               *_REPLICAS, train_steps=200))
  assert result.returncode == 0, result.stderr[-3000:]
  assert faultutil.latest_step(model_dir) == 200
  expected = path.final_metrics(reference.stdout)
  metrics = path.final_metrics(result.stdout)
  np.testing.assert_allclose([metrics[k] for k in sorted(expected)],
                             [expected[k] for k in sorted(expected)],
                             rtol=1e-4)
  record.add('restart', 0, seconds, 'final metrics equal an uninterrupted '
             'run', True)
