"""Two jobs on one model_dir: the second is refused within seconds, naming
the holder, and writes nothing; the first goes on to its own checkpoints
(before: both ran, checkpoints interleaved, global_step past train_steps).
trainer.main refuses it before importing TensorFlow (before: after the
import and the input checks, 35-51 s on a loaded machine); the launcher
when the program's Estimator.train() starts, the first moment a program
names its model_dir as the one it trains."""

import os
import re
import signal
import socket

import pytest

from tests.faults import cases
from tests.faults import faultutil


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_second_job_on_one_model_dir_is_refused(path_name, fault_data,
                                                  tmp_path):
  path = faultutil.PATHS[path_name]
  model_dir = str(tmp_path / 'model')
  log = str(tmp_path / 'first.log')
  first = faultutil.start(path.command(model_dir, fault_data,
                                       train_steps=100000), log)
  try:
    faultutil.wait_for(first, log, path.moments['mid-step'])
    second, seconds = faultutil.run(
        path.command(model_dir, fault_data),
        env={'PYTHONPROFILEIMPORTTIME': '1'} if path.name == 'main' else None)
    first.send_signal(signal.SIGTERM)
    assert faultutil.finish(first) == 143
  finally:
    if first.poll() is None:
      first.kill()
  assert second.returncode == cases.exit_status('second-job'), (
      second.stderr[-3000:])
  line = faultutil.assert_first_message(
      second.stderr, cases.message_pattern(
          path.name, 'second-job', MODEL_DIR=model_dir, PID=first.pid,
          HOST=socket.gethostname()))
  assert 'Traceback' not in second.stderr
  if path.name == 'main':
    assert not faultutil.imported_tensorflow(second.stderr)
  with open(log) as f:
    stopped = int(re.search(r'stopped at step (\d+)', f.read()).group(1))
  steps = sorted(int(m.group(1)) for m in (
      re.match(r'model\.ckpt-(\d+)\.index$', n) for n in os.listdir(model_dir))
                 if m)
  assert steps[-1] == stopped == faultutil.latest_step(model_dir)
  faultutil.assert_every_checkpoint_loads(model_dir)
  faultutil.Record(path.name).add('two jobs on one model_dir', 1, seconds,
                                  line, True)
