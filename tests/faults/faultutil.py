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


def _env(extra=None):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  env.update(extra or {})
  return env


def launcher_command(args, launcher_args=()):
  """`python -m trainer.legacy [LAUNCHER_ARGS] program.py ARGS`."""
  return ([sys.executable, '-m', 'trainer.legacy'] + list(launcher_args) +
          [PROGRAM] + list(args))


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
    r'^([IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] |'  # absl
    r'(INFO|WARNING|ERROR|DEBUG|CRITICAL):[\w.]+:|'  # Python logging
    r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |'  # TensorFlow's C++
    r'WARNING: All log messages before absl::InitializeLog|'
    r'\S+\.py:\d+: \w*Warning: )')  # Python warnings


def message_lines(stderr):
  """stderr's lines that no logger wrote: what a user reads as the
  outcome (log records' continuation lines, indented, are left out)."""
  lines = []
  in_record = False
  for line in stderr.splitlines():
    if _LOG_LINE.match(line):
      in_record = True
      continue
    if in_record and (line.startswith((' ', '\t', '}', ']', ')', ',', "'"))
                      or not line.strip()):
      continue
    in_record = False
    lines.append(line)
  return lines


def assert_first_message(stderr, pattern):
  """The first line of stderr that no logger wrote matches `pattern`,
  and no traceback comes before it."""
  lines = message_lines(stderr)
  assert lines, f'no message on stderr:\n{stderr[-3000:]}'
  assert re.search(pattern, lines[0]), (
      f'first message line {lines[0]!r} does not match {pattern!r}:\n'
      f'{stderr[-3000:]}')
  return lines[0]


def assert_every_checkpoint_loads(model_dir):
  """Every checkpoint in model_dir (not its quarantine) reads in full:
  every tensor of every .index left there."""
  indexes = glob.glob(os.path.join(str(model_dir), '*.index'))
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
