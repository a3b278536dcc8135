"""SIGTERM and SIGKILL in a job of two MultiWorkerMirroredStrategy workers on
127.0.0.1 (tf2 runner).

SIGTERM to either worker, at a seeded random moment of training: both exit
143 within 60 s, each with a checkpoint at the same step, and the restarted
pair trains from it to --train_steps. SIGKILL to either worker: the other
exits non-zero within 60 s with one error line naming the lost worker.
TensorFlow's coordination service installs its own SIGTERM handler in such
jobs; these tests fail if the trainer's is not the one that runs.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

from tests import testutil

STOP_WITHIN_SECS = 60  # The promise tested; not a hang guard.
_PORT_TAKEN = ('Address already in use', 'Failed to add port')



def _trainer_command(model_dir, train_steps):
  return [sys.executable, '-m', 'trainer.main', '--runner=tf2',
          '--mode=train', f'--train_steps={train_steps}',
          '--iterations_per_loop=5', '--save_checkpoints_steps=100000',
          '--num_cores=1', '--train_batch_size=32', '--augmentation=none',
          f'--model_dir={model_dir}']


class _Job:
  """Two workers of one TF_CONFIG cluster; stderr in files."""

  def __init__(self, tmp_path, name, model_dir, train_steps,
               command=_trainer_command):
    cluster = {'worker': [f'127.0.0.1:{p}' for p in testutil.free_ports(2)]}
    tasks = [('worker', 0), ('worker', 1)]
    self.logs = [tmp_path / f'{name}-{i}.log' for i in range(2)]
    self.workers = []
    for index, (kind, task_index) in enumerate(tasks):
      env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', TF_CONFIG=json.dumps(
          {'cluster': cluster, 'task': {'type': kind, 'index': task_index}}))
      with open(self.logs[index], 'w') as log:
        self.workers.append(subprocess.Popen(
            command(model_dir, train_steps), cwd=testutil.REPO_ROOT,
            env=env, stdout=subprocess.PIPE, stderr=log, text=True))

  def wait(self, timeout):
    """[(returncode, stdout, stderr)] once both ended; AssertionError naming
    the workers still running after `timeout` s (they are killed)."""
    deadline = time.monotonic() + timeout
    try:
      for worker in self.workers:
        worker.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
      running = [i for i, w in enumerate(self.workers) if w.poll() is None]
      raise AssertionError(f'workers {running} still run {timeout} s on:\n' +
                           self.log(running[0])[-3000:]) from None
    finally:
      self.kill()
    return [(w.returncode, w.stdout.read(), self.log(i))
            for i, w in enumerate(self.workers)]

  def log(self, index):
    return self.logs[index].read_text()

  def kill(self):
    for worker in self.workers:
      if worker.poll() is None:
        worker.kill()

  def port_taken(self):
    return any(w.poll() not in (None, 0) and
               any(m in self.log(i) for m in _PORT_TAKEN)
               for i, w in enumerate(self.workers))


def _training_job(tmp_path, name, model_dir, train_steps,
                  command=_trainer_command):
  """A job whose both workers are training (restarted on other ports if a
  port was taken before a worker bound it)."""
  for attempt in range(3):
    job = _Job(tmp_path, f'{name}{attempt}', model_dir, train_steps, command)
    try:
      for index in range(2):
        testutil.wait_for_training(job.workers[index], job.logs[index])
      return job
    except AssertionError:
      job.kill()
      if not job.port_taken():
        raise
  raise AssertionError('ports kept being taken')


def test_sigterm_to_one_worker_stops_both_at_one_step_then_resumes(tmp_path):
  rng = random.Random(testutil.seed_from_env())
  target, delay = rng.randrange(2), rng.uniform(0.0, 3.0)
  print(f'SIGTERM to worker {target} {delay:.2f} s into training')
  model_dir = tmp_path / 'model'
  job = _training_job(tmp_path, 'first', model_dir, train_steps=1000000)
  time.sleep(delay)
  job.workers[target].send_signal(signal.SIGTERM)
  results = job.wait(STOP_WITHIN_SECS)
  for code, _, err in results:
    assert code == 143, err[-3000:]
    assert 'preempted:' in err
  step = testutil.latest_step(model_dir)
  assert step and step == testutil.latest_step(model_dir / 'worker-1')

  resumed = _training_job(tmp_path, 'again', model_dir, train_steps=step + 10)
  for code, out, err in resumed.wait(testutil.HANG_TIMEOUT):
    assert code == 0, err[-3000:]
    assert f'global_step: {step + 10}' in out
  first_progress = testutil.progress_step(resumed.logs[0])
  assert first_progress is not None and first_progress > step


def test_a_killed_worker_stops_the_other_naming_it(tmp_path):
  rng = random.Random(testutil.seed_from_env())
  target = rng.randrange(2)
  print(f'SIGKILL to worker {target}')

  def command(model_dir, train_steps):
    return _trainer_command(model_dir, train_steps) + [
        '--peer_timeout_secs=5']

  job = _training_job(tmp_path, 'job', tmp_path / 'model',
                      train_steps=1000000, command=command)
  job.workers[target].kill()
  survivor = 1 - target
  code, _, err = job.wait(STOP_WITHIN_SECS)[survivor]
  assert code not in (0, 143), err[-3000:]
  assert f'error: the job lost worker {target}' in err, err[-3000:]


_HEARTBEAT_PROBE = """
import json, os, sys
from tensorflow.python.eager import context
from trainer.runtime import tf_config
cluster = {'worker': ['127.0.0.1:1', '127.0.0.1:2']}
os.environ['TF_CONFIG'] = json.dumps({'cluster': cluster,
                                      'task': {'type': 'worker', 'index': 1}})
assert not tf_config.configure_peer_timeout(0)
assert context.context().coordination_service is None
assert not tf_config.configure_peer_timeout(7, tf_config=json.dumps(
    {'cluster': {'worker': ['127.0.0.1:1']}}))
assert tf_config.configure_peer_timeout(7)
config = context.context().coordination_service
print(config.heartbeat_timeout_in_ms, config.service_leader,
      [(j.name, j.num_tasks) for j in config.coordinated_job_list])
assert not tf_config.configure_peer_timeout(9)   # set once, kept
"""


def test_peer_timeout_sets_the_coordination_heartbeat():
  # In a child: the coordination config is process-wide.
  result = subprocess.run([sys.executable, '-c', _HEARTBEAT_PROBE],
                          cwd=testutil.REPO_ROOT, capture_output=True,
                          text=True, timeout=testutil.HANG_TIMEOUT,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.split() == [
      '7000', '/job:worker/replica:0/task:0', "[('worker',", '2)]']
