"""Same program, same initial checkpoint and data: TF 2.15's real Estimator
and the facade on TF 2.20 give the same checkpoint variables and per-step
losses within verify_migration's float32 tolerance (1e-6, one replica).

Drives both lanes' interpreters (.venv/legacy and .venv/modern), so it runs
once, on the lane without Estimator; it skips where a lane is not installed.
"""

import os
import re
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from tests.launcher import programs_test as legacy_programs_test

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))))
PYTHONS = {lane: os.path.join(SOURCE_ROOT, '.venv', lane, 'bin', 'python')
           for lane in ('legacy', 'modern')}
TOLERANCE = 1e-6  # verify_migration's float32 tolerance for one replica.
# Weights after 20 steps: each optimizer step moves a weight by at most about
# the learning rate (0.01-0.05), so 1e-4 is well below a step.
WEIGHT_TOLERANCE = 1e-4
SHAPES = {'mlp/hidden/kernel': [784, 32], 'mlp/hidden/bias': [32],
          'mlp/logits/kernel': [32, 10], 'mlp/logits/bias': [10]}

pytestmark = [
    pytest.mark.skipif(
        testutil.HAS_ESTIMATOR,
        reason='compares TF 2.15 with the facade by driving both lanes; it '
        'runs once, on the lane without Estimator'),
    pytest.mark.skipif(
        not all(os.path.exists(p) for p in PYTHONS.values()),
        reason='needs both .venv/legacy and .venv/modern (scripts/setup_env.sh)'),
]


def _launch(lane, program, *flags):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=testutil.REPO_ROOT)
  result = subprocess.run(
      [PYTHONS[lane], '-m', 'trainer.legacy', '--cpu_fallback',
       os.path.join(legacy_programs_test.PROGRAMS, program),
       f'--data_dir={testutil.DIGITS_RAW}'] + list(flags),
      cwd=testutil.REPO_ROOT, env=env, capture_output=True, text=True,
      timeout=900)
  assert result.returncode == 0, f'{lane}: {result.stderr[-3000:]}'
  return result


@pytest.fixture(scope='module')
def init_checkpoint(tmp_path_factory):
  """Weights every run starts from (the fixtures' random init differs)."""
  path = str(tmp_path_factory.mktemp('init') / 'init.ckpt')
  rng = np.random.RandomState(0)
  with tf.Graph().as_default():
    variables = {
        name: tf.compat.v1.Variable(
            (rng.standard_normal(shape) * 0.05).astype(np.float32), name=name)
        for name, shape in SHAPES.items()}
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver(variables).save(session, path,
                                               write_meta_graph=False)
  return path


def _variables(model_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
  return {name: reader.get_tensor(name)
          for name in reader.get_variable_to_shape_map()}


def _max_diff(a, b):
  """Max |a - b| over the model's trainable variables (verify_migration's
  max |dweight|; optimizer slots are reported by the losses they cause)."""
  return max(float(np.max(np.abs(np.asarray(a[k], np.float64) -
                                 np.asarray(b[k], np.float64))))
             for k in SHAPES)


def test_tpu_estimator_program_matches_tf215(init_checkpoint, tmp_path):
  runs = {}
  for lane in PYTHONS:
    model_dir = str(tmp_path / lane)
    train = _launch(lane, 'tpu_main.py', f'--model_dir={model_dir}',
                    f'--init_checkpoint={init_checkpoint}',
                    '--train_steps=20', '--steps_per_eval=20')
    predict = _launch(lane, 'tpu_main.py', f'--model_dir={model_dir}',
                      '--mode=predict')
    runs[lane] = {
        'variables': _variables(model_dir),
        'losses': [v for _, v in legacy_programs_test.events(
            model_dir, 'fixture/loss')],
        'eval': re.search(r'eval global_step=20 loss=(\S+) accuracy=(\S+)',
                          train.stdout).groups(),
        'probabilities': np.array([[float(x) for x in line.split()] for line
                                   in re.findall(r'probabilities=(.*)',
                                                 predict.stdout)])}
  legacy, modern = runs['legacy'], runs['modern']
  assert set(legacy['variables']) == set(modern['variables'])
  for name, value in legacy['variables'].items():
    assert value.shape == modern['variables'][name].shape, name
    assert value.dtype == modern['variables'][name].dtype, name
  assert len(legacy['losses']) == len(modern['losses']) == 20
  loss_diff = float(np.max(np.abs(np.subtract(legacy['losses'],
                                              modern['losses']))))
  assert loss_diff <= TOLERANCE, (legacy['losses'], modern['losses'])
  assert _max_diff(legacy['variables'], modern['variables']) <= (
      WEIGHT_TOLERANCE)
  np.testing.assert_allclose([float(x) for x in modern['eval']],
                             [float(x) for x in legacy['eval']], atol=1e-5)
  np.testing.assert_allclose(modern['probabilities'],
                             legacy['probabilities'], atol=1e-5)
  print(f'tpu_main: {len(legacy["losses"])} steps, max |dloss| {loss_diff:.2e}, '
        f'max |dweight| {_max_diff(legacy["variables"], modern["variables"]):.2e}')


def test_estimator_program_matches_tf215(init_checkpoint, tmp_path):
  runs = {}
  for lane in PYTHONS:
    model_dir = str(tmp_path / lane)
    result = _launch(lane, 'estimator_main.py', f'--model_dir={model_dir}',
                     f'--init_checkpoint={init_checkpoint}',
                     '--evaluate=false')
    logged = re.findall(r'fixture_loss = (\S+), fixture_step = (\d+)',
                        result.stderr)
    runs[lane] = {'variables': _variables(model_dir),
                  'losses': {int(s): float(l) for l, s in logged}}
  legacy, modern = runs['legacy'], runs['modern']
  assert set(legacy['variables']) == set(modern['variables'])
  assert sorted(legacy['losses']) == sorted(modern['losses']) == list(
      range(20))
  loss_diff = max(abs(legacy['losses'][s] - modern['losses'][s])
                  for s in legacy['losses'])
  assert loss_diff <= TOLERANCE
  weight_diff = _max_diff(legacy['variables'], modern['variables'])
  assert weight_diff <= WEIGHT_TOLERANCE
  print(f'estimator_main: 20 steps, max |dloss| {loss_diff:.2e}, '
        f'max |dweight| {weight_diff:.2e}')
