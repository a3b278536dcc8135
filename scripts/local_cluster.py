"""Runs one program as every task of a TF_CONFIG cluster on this machine.

  python scripts/local_cluster.py [--chief=1] [--workers=2] [--ps=1]
      [--evaluator=1] [--master] [--logdir=DIR] [--timeout_secs=N]
      -- COMMAND [ARGS...]

Starts COMMAND once per task, each with the TF_CONFIG Kubeflow's TFJob
writes for its pod: every role in "cluster" (the evaluator's too), the
task's type and index, "environment": "cloud"; addresses are free loopback
ports (127.0.0.1). With --master the training cluster has a "master" task
instead of a "chief" (Estimator's older layout; no evaluator). Each task's
stdout and stderr go to DIR/TYPE-INDEX.log. The launcher waits for the
chief/master, workers and evaluator to end, then stops the ps tasks (they
serve until stopped, as TFJob deletes them when the job succeeds), prints
one line per task (`worker:1 exit 0 after 12.3 s`) and exits 0 if every
task it waited for exited 0, else 1; a task still running after
--timeout_secs is killed and counts as failed.

With --one_cpu_per_task each task may run on one CPU only (round robin over
the launcher's CPUs), as a pod with a one-CPU cpuset: TensorFlow then sizes
its thread pools for one CPU.

Tests use `LocalCluster` directly (start, kill or restart one task, wait).
Only the standard library: the launcher itself starts in milliseconds.
"""

import argparse
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

ROLES = ('chief', 'master', 'worker', 'ps', 'evaluator')
# Tasks the job waits for (TFJob's success: the chief's; here every trainer).
WAITED = ('chief', 'master', 'worker', 'evaluator')
PORT_TAKEN = ('Address already in use', 'Failed to add port')


def free_ports(count):
  """`count` distinct ports free a moment ago on 127.0.0.1."""
  sockets = [socket.socket() for _ in range(count)]
  try:
    for s in sockets:
      s.bind(('127.0.0.1', 0))
    return [s.getsockname()[1] for s in sockets]
  finally:
    for s in sockets:
      s.close()


def cluster_spec(chief=1, workers=2, ps=1, evaluator=1, master=False):
  """TF_CONFIG's "cluster" on free loopback ports: {role: [host:port]}."""
  counts = {'master' if master else 'chief': chief, 'worker': workers,
            'ps': ps, 'evaluator': evaluator}
  counts = {role: n for role, n in counts.items() if n}
  ports = iter(free_ports(sum(counts.values())))
  return {role: [f'127.0.0.1:{next(ports)}' for _ in range(n)]
          for role, n in counts.items()}


def tf_config(cluster, task_type, index):
  """The TF_CONFIG TFJob writes for task (task_type, index) of `cluster`."""
  return json.dumps({'cluster': cluster,
                     'task': {'type': task_type, 'index': index},
                     'environment': 'cloud'})


@dataclasses.dataclass
class Task:
  """One task's process; `starts` counts its (re)starts."""
  type: str
  index: int
  log_path: str
  process: Optional[subprocess.Popen] = None
  started_at: float = 0.0
  ended_at: Optional[float] = None
  starts: int = 0

  @property
  def name(self):
    return f'{self.type}:{self.index}'

  def log(self):
    with open(self.log_path, errors='replace') as f:
      return f.read()

  def running(self):
    return self.process is not None and self.process.poll() is None


class LocalCluster:
  """COMMAND run as every task of one TF_CONFIG cluster (see module doc)."""

  def __init__(self, command: List[str], logdir, cluster, env=None, cwd=None,
               one_cpu_per_task=False):
    self.command = list(command)
    self.one_cpu_per_task = one_cpu_per_task
    self.logdir = str(logdir)
    self.cluster = cluster
    self.env = dict(os.environ if env is None else env)
    self.cwd = cwd
    self.tasks = [Task(role, i, os.path.join(self.logdir, f'{role}-{i}.log'))
                  for role in ROLES for i in range(len(cluster.get(role, [])))]
    os.makedirs(self.logdir, exist_ok=True)

  def task(self, task_type, index=0):
    for task in self.tasks:
      if (task.type, task.index) == (task_type, index):
        return task
    raise KeyError(f'no task {task_type}:{index} in {self.cluster}')

  def start(self, task=None):
    """Starts `task` (default: every task, ps first); a restart appends to
    the task's log, as a pod restarted under the same name."""
    if task is None:
      for each in sorted(self.tasks, key=lambda t: t.type != 'ps'):
        self.start(each)
      return
    env = dict(self.env, TF_CONFIG=tf_config(self.cluster, task.type,
                                             task.index))
    with open(task.log_path, 'a') as log:
      if task.starts:
        log.write(f'\n=== local_cluster: {task.name} restarted ===\n')
        log.flush()
      task.process = subprocess.Popen(
          self.command, env=env, cwd=self.cwd, stdout=log,
          stderr=subprocess.STDOUT, start_new_session=True,
          preexec_fn=self._cpu_pinning(task))
    task.started_at = time.monotonic()
    task.ended_at = None
    task.starts += 1

  def _cpu_pinning(self, task):
    """With one_cpu_per_task: a preexec_fn confining the task to one of
    this process's CPUs (round robin in task order), else None."""
    if not self.one_cpu_per_task:
      return None
    cpus = sorted(os.sched_getaffinity(0))
    cpu = cpus[self.tasks.index(task) % len(cpus)]
    return lambda: os.sched_setaffinity(0, {cpu})

  def signal(self, task, signum):
    """Sends `signum` to the task's process (not to its children)."""
    if task.running():
      task.process.send_signal(signum)

  def kill(self, task):
    """SIGKILLs the task and reaps it (a pod lost with its node)."""
    if task.running():
      task.process.kill()
    if task.process is not None:
      task.process.wait()

  def wait(self, task, timeout):
    """The task's exit status; None if still running after `timeout` s."""
    try:
      code = (task.process.wait(timeout=timeout) if timeout
              else task.process.poll())
    except subprocess.TimeoutExpired:
      return None
    if code is None:
      return None
    if task.ended_at is None:
      task.ended_at = time.monotonic()
    return code

  def wait_all(self, timeout, roles=WAITED):
    """{task name: exit status, or None if it still ran after `timeout` s
    (then killed)} of the tasks of `roles`, polled together."""
    deadline = time.monotonic() + timeout
    waited = [t for t in self.tasks if t.type in roles]
    while None in [self.wait(t, 0) for t in waited]:  # Polls every task.
      if time.monotonic() > deadline:
        break
      time.sleep(0.2)
    results = {t.name: self.wait(t, 0) for t in waited}
    for task in waited:
      if results[task.name] is None:
        self.kill(task)
    return results

  def stop(self):
    """Stops every task still running: SIGTERM, SIGKILL after 10 s."""
    for task in self.tasks:
      self.signal(task, signal.SIGTERM)
    for task in self.tasks:
      if task.process is not None and self.wait(task, 10) is None:
        self.kill(task)

  def port_taken(self):
    """Whether a task failed because another process took its port."""
    return any(t.process is not None and t.process.poll() not in (None, 0)
               and any(m in t.log() for m in PORT_TAKEN) for t in self.tasks)


def _parse(argv):
  parser = argparse.ArgumentParser(
      prog='local_cluster', description=__doc__.split('\n\n')[0],
      usage='%(prog)s [options] -- COMMAND [ARGS...]')
  parser.add_argument('--chief', type=int, default=1, choices=(0, 1))
  parser.add_argument('--workers', type=int, default=2)
  parser.add_argument('--ps', type=int, default=1)
  parser.add_argument('--evaluator', type=int, default=1, choices=(0, 1))
  parser.add_argument('--master', action='store_true',
                      help='a "master" task instead of "chief" (no evaluator)')
  parser.add_argument('--logdir', default=None,
                      help='where TYPE-INDEX.log go (default: a new '
                      'temporary directory)')
  parser.add_argument('--timeout_secs', type=float, default=3600)
  parser.add_argument('--one_cpu_per_task', action='store_true',
                      help='confine each task to one CPU (round robin)')
  if '--' not in argv:
    parser.error('give the command after --')
  split = argv.index('--')
  args = parser.parse_args(argv[:split])
  args.command = argv[split + 1:]
  if not args.command:
    parser.error('no command after --')
  if args.master and args.evaluator:
    parser.error('--master: Estimator supports no evaluator beside a master '
                 '(pass --evaluator=0)')
  return args


def main(argv):
  args = _parse(argv[1:])
  logdir = args.logdir or tempfile.mkdtemp(prefix='local_cluster.')
  cluster = cluster_spec(args.chief, args.workers, args.ps, args.evaluator,
                         args.master)
  job = LocalCluster(args.command, logdir, cluster,
                     one_cpu_per_task=args.one_cpu_per_task)
  print(f'local_cluster: {json.dumps(cluster)}; logs in {logdir}',
        flush=True)
  job.start()
  try:
    results = job.wait_all(args.timeout_secs)
  finally:
    job.stop()
  for task in job.tasks:
    if task.name in results:
      code = results[task.name]
      took = (task.ended_at or time.monotonic()) - task.started_at
      print(f'{task.name} ' + (f'exit {code} after {took:.1f} s'
                               if code is not None else
                               f'killed after {args.timeout_secs:.0f} s'))
  return 0 if all(code == 0 for code in results.values()) else 1


if __name__ == '__main__':
  sys.exit(main(sys.argv))
