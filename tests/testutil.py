"""Shared helpers for tests: repo paths, lane checks, tiny params."""

import contextlib
import os
import re
import socket
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from trainer import config as config_lib
from trainer.api import estimator_names as estimator_compat
from trainer.runtime import checkpoints

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS_RAW = os.path.join(REPO_ROOT, 'data', 'digits', 'raw')
DIGITS_JPEG = os.path.join(REPO_ROOT, 'data', 'digits', 'jpeg')

# The real TPUEstimator, not the facade conftest installs on TF >= 2.16.
HAS_ESTIMATOR = estimator_compat.has_estimator()
requires_estimator = pytest.mark.skipif(
    not HAS_ESTIMATOR,
    reason=f'tf.estimator does not exist in TensorFlow {tf.__version__} '
    '(removed in 2.16); this test exercises the TPUEstimator path.')
# The facade's own side of a test that runs it beside the real Estimator:
# on TF 2.15 programs run the real Estimator (trainer.legacy installs no
# facade there), so that lane runs the real side only; the facade's lanes
# (TF >= 2.16) run the facade's.
facade_lanes = pytest.mark.skipif(
    HAS_ESTIMATOR,
    reason='the facade, which TF 2.15 programs never run (they get the real '
    'Estimator); tested on the TF >= 2.16 lanes')
# The runner trainer.main picks without --runner on this lane.
DEFAULT_RUNNER = 'estimator' if HAS_ESTIMATOR else 'tf2'


# The tiny run tests start from: trainer.config.Config with these changes.
TINY = dict(
    iterations_per_loop=10, mode='train', data_dir=DIGITS_RAW,
    train_steps=20, steps_per_eval=20, train_batch_size=32,
    eval_batch_size=40, augmentation='none', shuffle_buffer=100,
    mlp_hidden_units=[16], resnet_depth=18, resnet_stem='small',
    learning_rate=0.01, lr_schedule='constant', save_checkpoints_steps=10,
    runner=DEFAULT_RUNNER)


def base_config(**settings):
  """The Config of a tiny run with `settings` (a name that is no setting is
  a TypeError naming it): what runners, engines and the runtime take."""
  return config_lib.Config(**TINY).replace(**settings)


def base_params(extra=None, **settings):
  """The params dict of a tiny run's Config with `settings` (a name that is
  no setting is a TypeError naming it), plus `extra`: keys that are no
  setting (what a runner adds, such as batch_size; a test model_fn's own).
  """
  params = config_lib.Config(**TINY).replace(**settings).as_params()
  params.update(extra or {})
  return params


# The README's statement of the main job's accuracy: the range a fresh
# machine reproduces (main_test checks the default job against it).
_ACCURACY_RANGE = re.compile(
    r'Top-1 accuracy: between (0\.\d+) and (0\.\d+) on any machine and seed')


def stated_accuracy_range():
  """(low, high) of the README's main-job accuracy statement."""
  with open(os.path.join(REPO_ROOT, 'README.md')) as f:
    found = _ACCURACY_RANGE.search(f.read().replace('\n', ' '))
  assert found, 'README.md states no accuracy range for the main job'
  return float(found.group(1)), float(found.group(2))


# A guard against hangs only, never a bound on speed: a trainer that has not
# started within it is stuck, on however slow a machine.
HANG_TIMEOUT = 900


def run_main(args, timeout=HANG_TIMEOUT, env=None, cwd=REPO_ROOT):
  """Runs `python -m trainer.main ARGS` in a subprocess; CompletedProcess."""
  full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  full_env.update(env or {})
  return subprocess.run([sys.executable, '-m', 'trainer.main'] + list(args),
                        cwd=cwd, env=full_env, capture_output=True, text=True,
                        timeout=timeout)


def call_on_cpu_devices(num_devices, fn, *args):
  """fn(*args) (a test module's top-level function; args with a repr that
  evaluates back) where the CPU is split into `num_devices` logical devices
  for --num_cpu_devices: here for 1, else in a new process (TF fixes its
  devices once initialised), which must end without error."""
  if num_devices == 1:
    return fn(*args)
  # Once fn returned, the process exits without the interpreter's teardown,
  # where destroying the tf.data iterators a MirroredStrategy left waits for
  # their autotuning threads (up to 60 s each; tests/conformance/run.py).
  code = ('import os, sys\n'
          'import tests.conftest\n'
          'from trainer.runtime import strategy\n'
          f'strategy.split_cpu({num_devices})\n'
          f'import {fn.__module__} as module\n'
          f'module.{fn.__name__}(*{args!r})\n'
          'sys.stdout.flush(); sys.stderr.flush(); os._exit(0)\n')
  result = subprocess.run(
      [sys.executable, '-c', code], cwd=REPO_ROOT, capture_output=True,
      text=True, timeout=HANG_TIMEOUT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, (
      f'{fn.__name__}{args!r} on {num_devices} CPU devices failed:\n'
      f'{result.stderr[-6000:]}')
  return None


def start_main(args, log_path, out_path=None):
  """`python -m trainer.main ARGS` in the background; stderr to log_path,
  stdout to out_path (default: a pipe)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  with open(log_path, 'w') as log, contextlib.ExitStack() as stack:
    out = (stack.enter_context(open(out_path, 'w')) if out_path
           else subprocess.PIPE)
    return subprocess.Popen([sys.executable, '-m', 'trainer.main'] + args,
                            cwd=REPO_ROOT, env=env, stdout=out,
                            stderr=log, text=True)


def wait_for_log(process, log_path, pattern, timeout=HANG_TIMEOUT):
  """Blocks until a line of log_path matches `pattern` (a regex); the match.

  AssertionError with the log's tail if the process exits first.
  """
  regex = re.compile(pattern, re.M)
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    with open(log_path) as f:
      match = regex.search(f.read())
    if match:
      return match
    if process.poll() is not None:
      with open(log_path) as f:
        raise AssertionError(f'trainer exited {process.returncode} before '
                             f'logging {pattern!r}:\n{f.read()[-3000:]}')
    time.sleep(0.01)
  raise AssertionError(f'no line {pattern!r} in {log_path} within {timeout} '
                       's: the trainer hangs')


def progress_step(log_path):
  """The step of log_path's last train progress line; None before one."""
  with open(log_path) as f:
    steps = re.findall(r'train \| step: (\d+)', f.read())
  return int(steps[-1]) if steps else None


def wait_for_step(process, log_path, step, timeout=HANG_TIMEOUT):
  """Blocks until log_path shows a train progress line at or past `step`;
  the step in the last one."""
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    seen = progress_step(log_path)
    if seen is not None and seen >= step:
      return seen
    if process.poll() is not None:
      with open(log_path) as f:
        raise AssertionError(f'trainer exited {process.returncode} before '
                             f'step {step}:\n{f.read()[-3000:]}')
    time.sleep(0.01)
  raise AssertionError(f'no train progress line at step >= {step} within '
                       f'{timeout} s: the trainer hangs')


def wait_for_training(process, log_path, timeout=HANG_TIMEOUT):
  """Blocks until log_path shows a train progress line; the step in it."""
  return wait_for_step(process, log_path, 0, timeout)


def seed_from_env(name='TEST_SEED'):
  """A seed for a test's random choices: $TEST_SEED if set, else a fresh
  one. Printed (pytest shows it with a failure) so a run can be repeated."""
  value = os.environ.get(name)
  seed = int(value) if value else int.from_bytes(os.urandom(4), 'little')
  print(f'{name}={seed} (set {name}={seed} to repeat this run)')
  return seed


def free_ports(count):
  """Ports free a moment ago on 127.0.0.1 (another process may take one
  before a worker binds it; callers retry on 'Address already in use')."""
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(('127.0.0.1', 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


@contextlib.contextmanager
def closed_port():
  """A localhost port nothing listens on, for the `with` block: bound and
  held (so no other process takes it) but never listening, so connections
  to it are refused."""
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    yield s.getsockname()[1]


def variable_name(variable):
  """A variable's name without the ':0' output index."""
  return variable.name.split(':')[0]


def checkpoint_values(model_dir):
  """{name: value} of every tensor in model_dir's latest checkpoint."""
  path = tf.train.latest_checkpoint(str(model_dir))
  reader = tf.train.load_checkpoint(path)
  return {name: reader.get_tensor(name)
          for name, _ in tf.train.list_variables(path)}


def latest_step(model_dir):
  """global_step of model_dir's latest checkpoint (None if there is none)."""
  return checkpoints.latest_checkpoint_step(model_dir)


# A legacy model_fn as teams write them: TPUEstimatorSpec and ModeKeys from
# tf itself, its own get_variable weights, optimizer and metric_fn.
LEGACY_USER_MODULE = '''
import tensorflow as tf

def model_fn(features, labels, mode, params):
  x = tf.reshape(features['image'], [-1, 28 * 28])
  w = tf.compat.v1.get_variable('linear/w', [784, 10])
  b = tf.compat.v1.get_variable('linear/b', [10],
                                initializer=tf.compat.v1.zeros_initializer())
  logits = tf.matmul(x, w) + b
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
        mode, predictions={'classes': tf.argmax(logits, 1)})
  loss = tf.reduce_mean(
      tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                     logits=logits))
  if mode == tf.estimator.ModeKeys.EVAL:
    def metric_fn(labels, logits):
      return {'accuracy': tf.compat.v1.metrics.accuracy(
          labels, tf.argmax(logits, 1))}
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
  optimizer = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)
  if params['use_tpu']:
    optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)
  train_op = optimizer.minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss,
                                                     train_op=train_op)

def input_fn(params):
  images = tf.random.stateless_uniform([params['batch_size'], 28, 28, 1],
                                       seed=[1, params['mode'] == 'train'])
  labels = tf.cast(tf.reduce_sum(images, [1, 2, 3]) > 392.0, tf.int32)
  dataset = tf.data.Dataset.from_tensors(({'image': images}, labels))
  return dataset.repeat() if params['mode'] == 'train' else dataset
'''


def write_legacy_user_module(path):
  """Writes LEGACY_USER_MODULE to `path` (a .py file outside the repo)."""
  with open(path, 'w') as f:
    f.write(LEGACY_USER_MODULE)
