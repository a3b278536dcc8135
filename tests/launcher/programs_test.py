"""The fixture programs in tests/legacy_programs, unmodified, through
`python -m trainer.legacy` on this lane (TF 2.15: the real Estimator;
TF >= 2.16: the facade on the tf2 runner)."""

import glob
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil

PROGRAMS = os.path.join(testutil.REPO_ROOT, 'tests', 'legacy_programs')


def launch(args, timeout=900):
  """Runs `python -m trainer.legacy ARGS`; CompletedProcess."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=testutil.REPO_ROOT)
  return subprocess.run([sys.executable, '-m', 'trainer.legacy'] + args,
                        cwd=testutil.REPO_ROOT, env=env, capture_output=True,
                        text=True, timeout=timeout)


def tpu_main(model_dir, *flags):
  return launch(['--cpu_fallback', os.path.join(PROGRAMS, 'tpu_main.py'),
                 f'--data_dir={testutil.DIGITS_RAW}',
                 f'--model_dir={model_dir}'] + list(flags))


def _ok(result):
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout


def _checkpoint_steps(model_dir):
  state = tf.train.get_checkpoint_state(model_dir)
  return [int(p.rsplit('-', 1)[1]) for p in state.all_model_checkpoint_paths]


def events(directory, tag):
  """[(step, value)] of scalar `tag` in directory's events files, in the
  order written (files by creation time in their names)."""
  found = []
  paths = glob.glob(os.path.join(directory, 'events.out.tfevents.*'))
  for path in sorted(paths, key=lambda p: p.split('tfevents.')[1]):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          number = (float(tf.make_ndarray(value.tensor))
                    if value.HasField('tensor') else value.simple_value)
          found.append((event.step, number))
  return found


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp('tpu_main') / 'model')
  return model_dir, _ok(tpu_main(model_dir))


def test_tpu_main_trains_and_evaluates_in_a_loop(trained):
  model_dir, stdout = trained
  steps = [int(s) for s in re.findall(r'eval global_step=(\d+)', stdout)]
  assert steps == [20, 40]
  accuracy = [float(a) for a in re.findall(r'accuracy=([\d.]+)', stdout)]
  assert all(0.1 < a <= 1.0 for a in accuracy)
  assert ('variables: global_step mlp/hidden/bias mlp/hidden/bias/Momentum '
          'mlp/hidden/kernel mlp/hidden/kernel/Momentum mlp/logits/bias '
          'mlp/logits/bias/Momentum mlp/logits/kernel '
          'mlp/logits/kernel/Momentum') in stdout
  assert _checkpoint_steps(model_dir) == [0, 10, 20, 30, 40]
  assert sorted(s for s, _ in events(os.path.join(model_dir, 'eval'),
                                     'accuracy')) == [20, 40]
  losses = events(model_dir, 'fixture/loss')  # The host_call's summaries.
  assert len(losses) == 40 and all(np.isfinite(v) for _, v in losses)


def test_tpu_main_continuous_evaluation_loop(trained):
  model_dir, _ = trained
  stdout = _ok(tpu_main(model_dir, '--mode=continuous_eval'))
  assert re.findall(r'continuous_eval checkpoint=(\S+) global_step=(\d+)',
                    stdout) == [('model.ckpt-40', '40')]


def test_tpu_main_predict_loop_prints_probabilities(trained):
  model_dir, _ = trained
  stdout = _ok(tpu_main(model_dir, '--mode=predict'))
  lines = re.findall(r'prediction \d+ class=(\d) probabilities=(.*)', stdout)
  assert len(lines) == 5
  for label, probabilities in lines:
    p = np.array([float(x) for x in probabilities.split()])
    assert p.shape == (10,) and abs(p.sum() - 1.0) < 1e-5
    assert int(label) == int(np.argmax(p))


def test_tpu_main_exports_a_placeholder_receiver_saved_model(trained,
                                                             tmp_path):
  model_dir, _ = trained
  result = tpu_main(model_dir, '--mode=export',
                    f'--export_dir={tmp_path / "export"}')
  path = re.search(r'exported (\S+)', _ok(result)).group(1)
  assert os.path.dirname(path) == str(tmp_path / 'export')
  served = tf.saved_model.load(path, tags=['serve'])
  outputs = served.signatures['classify'](images=tf.zeros([2, 784]))
  assert outputs['probabilities'].shape == (2, 10)


@pytest.fixture(scope='module')
def estimator_run(tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp('estimator_main') / 'model')
  return model_dir, launch([os.path.join(PROGRAMS, 'estimator_main.py'),
                            f'--data_dir={testutil.DIGITS_RAW}',
                            f'--model_dir={model_dir}'])


def test_estimator_main_trains_with_its_logging_tensor_hook(estimator_run):
  model_dir, result = estimator_run
  steps = re.findall(r'fixture_loss = [\d.]+, fixture_step = (\d+)',
                     result.stderr)
  assert [int(s) for s in dict.fromkeys(steps)] == list(range(20))
  assert 'latest checkpoint: model.ckpt-20' in result.stdout
  assert _checkpoint_steps(model_dir) == [0, 10, 20]


def test_estimator_main_evaluates_eval_metric_ops(estimator_run):
  _, result = estimator_run
  match = re.search(r'eval global_step=20 loss=([\d.]+) accuracy=([\d.]+)',
                    _ok(result))
  assert match and 0.1 < float(match.group(2)) <= 1.0


def test_estimator_main_predicts(estimator_run):
  model_dir, _ = estimator_run
  stdout = _ok(launch([os.path.join(PROGRAMS, 'estimator_main.py'),
                       f'--data_dir={testutil.DIGITS_RAW}',
                       f'--model_dir={model_dir}', '--evaluate=false']))
  assert 'latest checkpoint: model.ckpt-40' in stdout  # Resumed, +20 steps.
  lines = re.findall(r'prediction \d+ class=(\d) p=(.*)', stdout)
  assert len(lines) == 3
  for label, probabilities in lines:
    p = np.array([float(x) for x in probabilities.split()])
    assert abs(p.sum() - 1.0) < 1e-3 and int(label) == int(np.argmax(p))


def test_train_and_evaluate_program_as_a_module(tmp_path):
  model_dir = str(tmp_path / 'model')
  stdout = _ok(launch(['-m', 'tests.legacy_programs.train_and_evaluate_main',
                       f'--data_dir={testutil.DIGITS_RAW}',
                       f'--model_dir={model_dir}']))
  assert re.search(r'final global_step=30 loss=[\d.]+ exports=0', stdout)
  evaluated = events(os.path.join(model_dir, 'eval_holdout'), 'loss')
  assert sorted(s for s, _ in evaluated) == [10, 20, 30]


@pytest.mark.skipif(testutil.HAS_ESTIMATOR, reason=(
    'tests/migration_doc_test.py runs every MIGRATION.md command on the '
    'lane with Estimator'))
def test_migration_step0_commands_run_on_tf_without_estimator(tmp_path):
  with open(os.path.join(testutil.REPO_ROOT, 'MIGRATION.md')) as f:
    doc = f.read()
  step0 = doc[doc.index('## Step 0'):doc.index('## 1.')]
  commands = [line for block in re.findall(r'^```sh\n(.*?)^```', step0,
                                           re.M | re.S)
              for line in block.splitlines() if line.strip()]
  assert len(commands) == 2
  for command in commands:
    args = command.replace('/tmp/migration', str(tmp_path)).split()
    assert args[:3] == ['python', '-m', 'trainer.legacy'], command
    _ok(launch(args[3:]))
  assert _checkpoint_steps(str(tmp_path / 'step0'))[-1] == 20
