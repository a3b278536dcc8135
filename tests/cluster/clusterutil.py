"""Loopback TF_CONFIG clusters of tests/cluster/census_main.py for the tests.

Each task runs `python -m trainer.legacy tests/cluster/census_main.py` on
this lane's interpreter: the real Estimator on TF 2.15 (the reference), the
facade on TF >= 2.16; the same test asserts the same on both lanes. Tasks
get the TF_CONFIG Kubeflow's TFJob writes (scripts/local_cluster.py).

What the reference did is recorded: each case's observations under TF
2.15's Estimator are in tests/cluster/golden/CASE.json, written by
scripts/record_cluster_reference.sh (which runs these tests on the legacy
lane with RECORD_CLUSTER_REFERENCE=1); a test compares the project's
observations with them (matches_reference), and asserts its invariants on
the lane it runs on. So CI runs the clusters once, on the modern lane.
"""

import glob
import json
import os
import re
import sys
import time

import tensorflow as tf

from scripts import local_cluster
from tests import testutil

PROGRAM = os.path.join(testutil.REPO_ROOT, 'tests', 'cluster',
                       'census_main.py')
# A hang guard only, never a speed bound (a loaded 2-core machine).
TIMEOUT = 600
GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'golden')
RECORDING = os.environ.get('RECORD_CLUSTER_REFERENCE') == '1'


def recording():
  """Whether this run records the reference (TF 2.15's Estimator only)."""
  if RECORDING and not testutil.HAS_ESTIMATOR:
    raise AssertionError('RECORD_CLUSTER_REFERENCE=1 records TF 2.15\'s '
                         'Estimator: run it on .venv/legacy '
                         '(scripts/record_cluster_reference.sh).')
  return RECORDING


def reference(name, observe):
  """The reference's observations `name` (JSON values): read from
  golden/NAME.json, or, when recording, observe()'s, written there."""
  path = os.path.join(GOLDEN_DIR, f'{name}.json')
  if recording():
    value = json.loads(json.dumps(observe(), sort_keys=True))
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    with open(path, 'w') as f:
      json.dump(value, f, indent=1, sort_keys=True)
      f.write('\n')
    return value
  if not os.path.exists(path):
    raise AssertionError(f'{path}: no recorded reference; run '
                         'scripts/record_cluster_reference.sh')
  with open(path) as f:
    return json.load(f)


def matches_reference(name, observed, differs=()):
  """Asserts `observed` (this lane's observations of case `name`) equals
  what TF 2.15's Estimator did (recorded; when recording, records it),
  but for the keys in `differs` (where the project differs by design: the
  caller asserts those). Returns the reference's observations."""
  observed = json.loads(json.dumps(observed, sort_keys=True))
  expected = reference(name, lambda: observed)
  differing = sorted(k for k in set(expected) | set(observed)
                     if k not in differs and expected.get(k) != observed.get(k))
  assert not differing, '\n'.join(
      f'{name}[{k!r}]: reference {expected.get(k)!r}, here '
      f'{observed.get(k)!r}' for k in differing)
  return expected


def anonymise(text, cluster_spec):
  """`text` with each task's address replaced by its name (ports differ
  from run to run)."""
  for kind, addresses in cluster_spec.items():
    for index, address in enumerate(addresses):
      text = text.replace(address, f'{kind}:{index}')
  return text


def async_tolerance(trainers):
  """How far past max_steps asynchronous training of `trainers` tasks may
  end (Estimator's and the facade's alike). A trainer stops after a step
  whose read of the shared step, plus one, reaches max_steps; a read is
  the value at the step's start, so a trainer may finish one step that
  started before the job reached max_steps and then take one more (its
  read was stale by the others' steps): two steps each, less the step
  that reached max_steps."""
  return 2 * trainers - 1


class Cluster(local_cluster.LocalCluster):
  """census_main.py as every task of a loopback cluster, model_dir under
  tmp_path; `flags` are the program's own, `launcher_flags` trainer.legacy's
  (TF 2.15 ignores --ps_timeout_secs: the real Estimator runs). `paced`:
  the tasks sleep --step_secs per step only until unpace()."""

  def __init__(self, tmp_path, name='job', *, workers=2, ps=1, evaluator=1,
               master=False, flags=(), launcher_flags=(), paced=False):
    self.model_dir = str(tmp_path / name / 'model')
    self.pace_file = None
    if paced:
      self.pace_file = str(tmp_path / name / 'pace')
      os.makedirs(os.path.dirname(self.pace_file), exist_ok=True)
      with open(self.pace_file, 'w'):
        pass
      flags = [*flags, f'--pace_file={self.pace_file}']
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
               PYTHONPATH=testutil.REPO_ROOT)
    super().__init__(
        [sys.executable, '-m', 'trainer.legacy', *launcher_flags, PROGRAM,
         f'--model_dir={self.model_dir}', '--keep_checkpoint_max=100',
         *flags],
        tmp_path / name / 'logs',
        local_cluster.cluster_spec(1, workers, ps, evaluator, master),
        env=env, cwd=testutil.REPO_ROOT)

  def start_chief_first(self):
    """Starts the ps tasks and the chief, then, once the chief has
    initialised the variables (its first checkpoint), the others: workers
    that start earlier wait 30 s for the chief in TensorFlow's session
    manager, under Estimator as here."""
    for task in self.tasks:
      if task.type in ('ps', 'chief'):
        self.start(task)
    self.wait_for_log(self.task('chief'), r'Saving checkpoints for \d+')
    for task in self.tasks:
      if task.process is None:
        self.start(task)

  def unpace(self):
    """From now on the tasks train at full speed (no --step_secs sleep)."""
    os.remove(self.pace_file)

  def wait_for_log(self, task, pattern, timeout=TIMEOUT, after=0):
    """The first match of `pattern` in the task's log past offset `after`;
    AssertionError with the log's tail if the task ends first."""
    regex = re.compile(pattern, re.M)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
      match = regex.search(task.log(), after)
      if match:
        return match
      if not task.running():
        raise AssertionError(f'{task.name} exited {task.process.returncode} '
                             f'before logging {pattern!r}:\n'
                             f'{task.log()[-4000:]}')
      time.sleep(0.05)
    raise AssertionError(f'{task.name}: no {pattern!r} in {timeout} s:\n'
                         f'{task.log()[-4000:]}')

  def finish(self, timeout=TIMEOUT):
    """Waits for the chief, workers and evaluator; stops the ps tasks (TFJob
    deletes them when the job succeeds). {task name: exit status}."""
    try:
      return self.wait_all(timeout)
    finally:
      self.stop()

  def logs(self):
    return {t.name: t.log() for t in self.tasks}

  def describe(self):
    """The tails of every task's log, for an assertion message."""
    return '\n'.join(f'--- {name}\n{log[-2500:]}'
                     for name, log in self.logs().items())


def local_steps(log):
  """(local steps, last global step) census_main.py printed at the end of
  its last training; None if it printed none."""
  found = re.findall(r'trained (\d+) local steps, last global step (\d+)', log)
  return tuple(int(v) for v in found[-1]) if found else None


def run_config_line(log):
  """The RunConfig fields census_main.py printed, as a dict of strings."""
  match = re.search(r'^run_config (.*)$', log, re.M)
  return dict(re.findall(r"(\w+)=('[^']*'|\S+)", match.group(1)))


def checkpoint_steps(model_dir):
  """Steps of the checkpoints in model_dir, ascending."""
  steps = []
  for index in glob.glob(os.path.join(model_dir, 'model.ckpt-*.index')):
    steps.append(int(re.search(r'ckpt-(\d+)\.index$', index).group(1)))
  return sorted(steps)


def variables(model_dir):
  """{name: shape} of the latest checkpoint in model_dir."""
  return dict(tf.train.list_variables(tf.train.latest_checkpoint(model_dir)))


def variable_devices(model_dir):
  """{variable name: device} of the training graph the chief wrote
  (model_dir/graph.pbtxt)."""
  graph = tf.compat.v1.GraphDef()
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  with open(os.path.join(model_dir, 'graph.pbtxt')) as f:
    text_format.Parse(f.read(), graph)
  return {node.name: node.device for node in graph.node
          if node.op in ('VarHandleOp', 'VariableV2')}


def eval_steps(model_dir, tag='loss'):
  """Global steps of the `tag` summaries in model_dir/eval, in order."""
  steps = []
  for path in sorted(glob.glob(os.path.join(model_dir, 'eval',
                                            'events.out.tfevents.*'))):
    for event in tf.compat.v1.train.summary_iterator(path):
      if any(v.tag == tag for v in event.summary.value):
        steps.append(event.step)
  return steps


def exports(model_dir, name='latest'):
  """The export directories of exporter `name`, oldest first."""
  return sorted(glob.glob(os.path.join(model_dir, 'export', name, '[0-9]*')))
