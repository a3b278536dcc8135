"""What the fault-injection tests share: the fixture program's data, the
two entry points as subprocesses, file systems that refuse writes, and the
checks every case makes."""

import contextlib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

from tests import testutil

PROGRAM = os.path.join(testutil.REPO_ROOT, 'tests', 'faults', 'program.py')
CANNED_PROGRAM = os.path.join(testutil.REPO_ROOT, 'tests', 'faults',
                              'canned_program.py')
COLORS = ('red', 'green', 'blue')
# The fixture's training split is exactly one batch: every step trains on
# the same examples, so an interrupted and resumed run ends where an
# uninterrupted one does.
BATCH = 16


def make_data(data_dir):
  """The fixture's data in data_dir: train-0000{0,1}-of-00002 (8 digits
  each: one batch) and validation-00000-of-00001 (32), copied from the
  embedded digits; returns data_dir."""
  os.makedirs(data_dir, exist_ok=True)
  source = os.path.join(testutil.DIGITS_RAW, 'train-00000-of-00004')
  records = [r.numpy() for r in tf.data.TFRecordDataset(source).take(48)]
  for name, part in (('train-00000-of-00002', records[:8]),
                     ('train-00001-of-00002', records[8:16]),
                     ('validation-00000-of-00001', records[16:48])):
    with tf.io.TFRecordWriter(os.path.join(data_dir, name)) as writer:
      for record in part:
        writer.write(record)
  return data_dir


def make_canned_data(directory, rows=32, nan_from=None):
  """canned_program.py's input in `directory`: data.csv (x1,x2,color,label
  rows; x1 is nan from row `nan_from` on) and colors.txt, its vocabulary
  file; returns (data file, vocabulary file)."""
  os.makedirs(directory, exist_ok=True)
  data = os.path.join(directory, 'data.csv')
  vocabulary = os.path.join(directory, 'colors.txt')
  with open(data, 'w') as f:
    for i in range(rows):
      x1, x2 = (i % 7) / 7.0, (i % 5) / 5.0
      shown = 'nan' if nan_from is not None and i >= nan_from else x1
      f.write(f'{shown},{x2},{COLORS[i % 3]},{int(x1 + x2 > 0.8)}\n')
  with open(vocabulary, 'w') as f:
    f.write('\n'.join(COLORS) + '\n')
  return data, vocabulary


def _env(extra=None):
  """The environment of a run: TF's C++ logs at errors (a test of what a
  user reads at start-up passes TF_CPP_MIN_LOG_LEVEL=None: unset)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  env.update(extra or {})
  return {k: v for k, v in env.items() if v is not None}


def launcher_command(args, launcher_args=()):
  """`python -m trainer.legacy [LAUNCHER_ARGS] program.py ARGS`."""
  return ([sys.executable, '-m', 'trainer.legacy'] + list(launcher_args) +
          [PROGRAM] + list(args))


def canned_command(args, launcher_args=()):
  """`python -m trainer.legacy [LAUNCHER_ARGS] canned_program.py ARGS`."""
  return ([sys.executable, '-m', 'trainer.legacy'] + list(launcher_args) +
          [CANNED_PROGRAM] + list(args))


def main_command(args):
  """`python -m trainer.main ARGS`."""
  return [sys.executable, '-m', 'trainer.main'] + list(args)


def run(command, env=None, timeout=testutil.HANG_TIMEOUT):
  """Runs `command` from the repository root; (CompletedProcess, seconds)."""
  start = time.monotonic()
  result = subprocess.run(command, cwd=testutil.REPO_ROOT, env=_env(env),
                          capture_output=True, text=True, timeout=timeout)
  return result, time.monotonic() - start


def start(command, log_path, env=None):
  """`command` in the background, stdout and stderr to log_path."""
  with open(log_path, 'w') as log:
    return subprocess.Popen(command, cwd=testutil.REPO_ROOT, env=_env(env),
                            stdout=log, stderr=subprocess.STDOUT, text=True)


def wait_for(process, log_path, pattern, timeout=testutil.HANG_TIMEOUT):
  """Blocks until log_path matches `pattern` (a regex); the match.
  AssertionError with the log's tail if the process ends first."""
  return testutil.wait_for_log(process, log_path, pattern, timeout)


def finish(process, timeout=testutil.HANG_TIMEOUT):
  """Waits for `process`; kills it if it hangs. Its return code."""
  try:
    return process.wait(timeout=timeout)
  finally:
    if process.poll() is None:
      process.kill()
      process.wait()


_LOG_LINE = re.compile(
    r'^([IWEF]\d{4} [\d:.]+ +\d+ \S+:\d+\] |'  # absl (Python and C++)
    r'(INFO|WARNING|ERROR|DEBUG|CRITICAL):[\w.]+:|'  # Python logging
    r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |'  # TensorFlow's C++
    r'WARNING: All log messages before absl::InitializeLog|'
    r'import time: |'  # PYTHONPROFILEIMPORTTIME=1
    r'\S+\.py:\d+: \w*Warning: |'  # Python warnings
    # The launcher's notes: what it runs on, and what a flag changed.
    r'trainer\.legacy: (TensorFlow \d|--cpu_fallback|--skip_corrupt))')


# Lines that start what the user reads as the outcome, never part of a log
# record: the entry points' own messages and a Python traceback.
_OUTCOME = re.compile(r'^(error: |trainer\.legacy: |preempted: |'
                      r'interrupted|FATAL |Traceback |usage: |\w+Error: )')


def message_lines(stderr):
  """stderr's lines that no logger wrote: what a user reads as the outcome.
  A log record's continuation lines (TF's deprecation notices, multi-line
  values) are left out; an outcome line (an entry point's `error: `, a
  traceback) always counts."""
  lines = []
  in_record = False
  for line in stderr.splitlines():
    if _LOG_LINE.match(line):
      in_record = True
      continue
    if in_record and not _OUTCOME.match(line):
      continue
    in_record = False
    lines.append(line)
  return lines


def first_line_read(stderr):
  """The first line a user reads: the first line of stderr no logger
  wrote (None if there is none)."""
  lines = message_lines(stderr)
  return lines[0] if lines else None


def assert_first_message(stderr, pattern):
  """The first line a user reads (first_line_read) matches `pattern`, so
  no traceback comes before it; that line."""
  line = first_line_read(stderr)
  assert line is not None, f'no message on stderr:\n{stderr[-3000:]}'
  assert re.search(pattern, line), (
      f'first message line {line!r} does not match {pattern!r}:\n'
      f'{stderr[-3000:]}')
  return line


# What TensorFlow prints at start-up, before a program's first line, that
# the entry points keep quiet (TF_CPP_MIN_LOG_LEVEL unset by the user).
# TF 2.21 prints its oneDNN and CUDA-driver banners as its library loads,
# before it reads TF_CPP_MIN_LOG_LEVEL: no setting silences those two.
_IMPORT_BANNERS = r'|cuda drivers|oneDNN'
START_UP_NOISE = re.compile(
    r'cuInit|cpu_feature_guard|FutureWarning|rebuild TensorFlow' +
    (_IMPORT_BANNERS if tuple(map(int, tf.__version__.split('.')[:2])) < (
        2, 21) else ''))


def assert_quiet_start(stderr):
  """Nothing TensorFlow prints at start-up comes before the first line a
  user reads (the run had TF_CPP_MIN_LOG_LEVEL unset)."""
  lines = stderr.splitlines()
  first = first_line_read(stderr)
  before = lines[:lines.index(first)] if first in lines else lines
  noise = [line for line in before if START_UP_NOISE.search(line)]
  assert not noise, f'start-up noise before {first!r}: {noise[:3]}'


def imported_tensorflow(stderr):
  """Whether a run with PYTHONPROFILEIMPORTTIME=1 imported TensorFlow
  (AssertionError if stderr has no import log)."""
  imported = re.findall(r'^import time:.*\| +(\S+)$', stderr, re.M)
  assert imported, 'no import log on stderr'
  return any(m.split('.')[0] == 'tensorflow' for m in imported)


def save_checkpoints(model_dir, steps, max_to_keep=5):
  """model.ckpt-STEP for each step, saved by a Saver as training saves."""
  with tf.Graph().as_default():
    weights = tf.compat.v1.get_variable('w', [60, 50])
    names = tf.compat.v1.get_variable('names', initializer=['a', 'bc'])
    del names  # A string tensor: its size is not dtype * shape.
    step_var = tf.compat.v1.train.get_or_create_global_step()
    saver = tf.compat.v1.train.Saver(sharded=True, max_to_keep=max_to_keep,
                                     save_relative_paths=True)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      for step in steps:
        sess.run([step_var.assign(step), weights.assign_add(tf.ones_like(
            weights))])
        saver.save(sess, os.path.join(model_dir, 'model.ckpt'),
                   global_step=step)


def assert_every_checkpoint_loads(model_dir, listed_only=False):
  """Every checkpoint in model_dir (not its quarantine) reads in full:
  every tensor of every .index left there; `listed_only`: of those the
  `checkpoint` state file names (after a SIGKILL mid-save, TF's .index
  written in place may be cut short until the next start quarantines it;
  the state names it only once it is complete)."""
  indexes = glob.glob(os.path.join(str(model_dir), '*.index'))
  if listed_only:
    state = tf.train.get_checkpoint_state(str(model_dir))
    listed = {os.path.basename(p) + '.index'
              for p in (state.all_model_checkpoint_paths if state else [])}
    indexes = [i for i in indexes if os.path.basename(i) in listed]
  for index in indexes:
    reader = tf.train.load_checkpoint(index[:-len('.index')])
    for name, dtype in reader.get_variable_to_dtype_map().items():
      value = reader.get_tensor(name)
      if dtype.is_floating:
        assert np.all(np.isfinite(value)), (index, name)
  return len(indexes)


def leftovers(model_dir):
  """Temporary files of saves left in model_dir (_temp, .tempstate, state
  temp files)."""
  if not os.path.isdir(model_dir):
    return []
  return [n for n in os.listdir(model_dir)
          if re.search(r'(_temp|\.tempstate\d+|\.tmp[0-9a-f]{32})$', n)]


@contextlib.contextmanager
def small_disk(megabytes):
  """A directory on a tmpfs of `megabytes` (mount needs root): yields its
  path, None when no tmpfs can be mounted here."""
  path = tempfile.mkdtemp(prefix='faults-disk-')
  mounted = subprocess.run(
      ['mount', '-t', 'tmpfs', '-o', f'size={megabytes}m', 'tmpfs', path],
      capture_output=True).returncode == 0 if shutil.which('mount') else False
  try:
    yield path if mounted else None
  finally:
    if mounted:
      subprocess.run(['umount', '-l', path], check=False)
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def read_only_dir():
  """A directory writes to which fail with EROFS (a read-only tmpfs, needs
  root) or EACCES (mode 0555, for a user that is not root); None if
  neither can be made here."""
  path = tempfile.mkdtemp(prefix='faults-ro-')
  mounted = shutil.which('mount') and subprocess.run(
      ['mount', '-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', path],
      capture_output=True).returncode == 0
  try:
    if mounted:
      yield path
    elif os.geteuid() != 0:
      os.chmod(path, 0o555)
      yield path
    else:
      yield None
  finally:
    if mounted:
      subprocess.run(['umount', '-l', path], check=False)
    os.chmod(path, 0o755)
    shutil.rmtree(path, ignore_errors=True)


def wait_for_after(process, log_path, pattern, offset=0,
                   timeout=testutil.HANG_TIMEOUT):
  """Blocks until log_path, from byte `offset` on, matches `pattern`;
  the match's end offset (in the whole log). AssertionError with the log's
  tail if the process ends first."""
  regex = re.compile(pattern, re.M)
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    with open(log_path) as f:
      text = f.read()
    match = regex.search(text, offset)
    if match:
      return match.end()
    if process.poll() is not None:
      raise AssertionError(f'exited {process.returncode} before logging '
                           f'{pattern!r}:\n{text[-3000:]}')
    time.sleep(0.005)
  raise AssertionError(f'no {pattern!r} within {timeout} s: it hangs')


def latest_step(model_dir):
  """The step of model_dir's latest checkpoint (0 without one)."""
  path = tf.train.latest_checkpoint(str(model_dir))
  return int(path.rsplit('-', 1)[1]) if path else 0


class Record:
  """Measured outcomes, for the closing table: appended as JSON lines to
  $FAULTS_REPORT when it is set."""

  def __init__(self, path):
    self.path = path

  def add(self, case, returncode, seconds, message, nothing_lost):
    target = os.environ.get('FAULTS_REPORT')
    if not target:
      return
    import json  # pylint: disable=g-import-not-at-top
    with open(target, 'a') as f:
      f.write(json.dumps({
          'case': case, 'path': self.path, 'lane': tf.__version__,
          'exit': returncode, 'seconds': round(seconds, 1),
          'message': message, 'nothing_lost': nothing_lost}) + '\n')


class Path:
  """One way users run training: the command for a model_dir and data_dir,
  the log lines that mark its moments, and its final metrics."""

  def __init__(self, name, command, moments, final_pattern):
    self.name = name
    self._command = command
    self.moments = moments  # {moment: regex of the line that starts it}
    self._final = re.compile(final_pattern, re.M)

  def command(self, model_dir, data_dir, *extra, train_steps=400):
    return self._command(str(model_dir), str(data_dir), train_steps,
                         list(extra))

  def final_metrics(self, stdout):
    """{name: float} of the run's final evaluation on stdout."""
    found = {m.group(1): float(m.group(2))
             for m in self._final.finditer(stdout)}
    assert 'loss' in found, f'no final metrics on stdout:\n{stdout[-2000:]}'
    return found


def _launcher(model_dir, data_dir, train_steps, extra):
  return launcher_command(
      [f'--model_dir={model_dir}', f'--data_dir={data_dir}',
       '--mode=train_and_evaluate', f'--train_steps={train_steps}',
       '--save_steps=50'] + extra)


def _main(model_dir, data_dir, train_steps, extra):
  return main_command(
      ['--verbosity=0', f'--model_dir={model_dir}', f'--data_dir={data_dir}',
       '--mode=train_and_evaluate', f'--train_steps={train_steps}',
       '--steps_per_eval=100', '--save_checkpoints_steps=50',
       f'--train_batch_size={BATCH}', f'--eval_batch_size={BATCH}',
       '--eval_steps=2', '--mlp_hidden_units=16', '--augmentation=none',
       '--iterations_per_loop=10', '--seed=1'] + extra)


LAUNCHER = Path(
    'launcher', _launcher,
    {'start-up': r'trainer\.legacy: TensorFlow',
     'mid-step': r'global_step/sec',
     'mid-save': r'Saving checkpoints for [1-9]\d* into',
     'mid-eval': r'Starting evaluation at',
     'mid-export': r'Signatures INCLUDED in export'},
    r'\b(global_step|loss|accuracy)=([\d.]+)')
MAIN = Path(
    'main', _main,
    {'start-up': r'Runner: ',
     'mid-step': r'train \| step: \d+',
     'mid-save': r'Saving checkpoints for [1-9]\d* into',
     # An evaluation restores the checkpoint its training segment saved.
     'mid-eval': r'Saving checkpoints for [1-9]\d*00 into[^\n]*\n(?:.*\n)*?'
                 r'.*Restor',
     'mid-export': r'Signatures INCLUDED in export|Restoring parameters'},
    r'^(global_step|loss|top_1_accuracy): ([\d.]+)$')
PATHS = {p.name: p for p in (LAUNCHER, MAIN)}
