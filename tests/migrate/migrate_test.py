"""trainer.migrate end to end on a team's model from outside the repository.

tests/migrate/team/ranker.py is written in a style the project does not use
(see its docstring); golden/ranker/ is its checkpoint after 10 steps under
the real Estimator (TF 2.15, `python -m tests.migrate.regenerate`). On the
TF >= 2.16 lanes the test migrates it once (a subprocess), then checks:
the report says equivalent and every comparison holds; the name mapping
covers the checkpoint; the generated train.py trains on from checkpoint/ in
a process where the project cannot be imported; the SavedModel has the
Estimator export's signatures; `--verify` catches a bug put into model.py.
On TF 2.15 the command refuses in one line.
"""

import ast
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import testutil

HERE = os.path.dirname(os.path.abspath(__file__))
TEAM = os.path.join(HERE, 'team')
GOLDEN = os.path.join(HERE, 'golden', 'ranker')
RANKER = ['--model=ranker:model_fn', '--input=ranker:input_fn',
          '--serving_input_fn=ranker:serving_input_fn',
          '--train_batch_size=16', '--eval_batch_size=16',
          '--learning_rate=0.05', '--seed=1']
tf2_lanes = pytest.mark.skipif(testutil.HAS_ESTIMATOR,
                               reason='trainer.migrate needs TF >= 2.16')


def run_migrate(args, env=None):
  full = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
              PYTHONPATH=os.pathsep.join([TEAM, testutil.REPO_ROOT]))
  full.update(env or {})
  return subprocess.run([sys.executable, '-m', 'trainer.migrate'] + args,
                        cwd=testutil.REPO_ROOT, env=full,
                        capture_output=True, text=True,
                        timeout=testutil.HANG_TIMEOUT)


def clean_env(out_dir):
  """An environment where only OUT's parent and the team's modules are on
  the path: the project is not importable."""
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  env.update(PYTHONPATH=os.pathsep.join([os.path.dirname(out_dir), TEAM]),
             TF_CPP_MIN_LOG_LEVEL='2')
  return env


@pytest.fixture(scope='module')
def migrated(tmp_path_factory):
  root = tmp_path_factory.mktemp('migrate')
  estimator_dir = str(root / 'estimator')
  shutil.copytree(GOLDEN, estimator_dir)
  out = str(root / 'ranker_tf2')
  result = run_migrate(RANKER + [f'--model_dir={estimator_dir}',
                                 f'--output_dir={out}'])
  with open(os.path.join(out, 'report.json'), encoding='utf-8') as f:
    report = json.load(f)
  return dict(root=root, out=out, estimator_dir=estimator_dir,
              result=result, report=report)


@tf2_lanes
def test_report_is_equivalent(migrated):
  result, report = migrated['result'], migrated['report']
  assert result.returncode == 0, result.stderr[-3000:]
  assert report['equivalent'] is True
  names = [c['name'] for c in report['comparisons']]
  assert names == ['forward outputs', 'loss', 'gradients',
                   'evaluation metrics', 'served outputs', 'training losses',
                   'training weights', 'moving statistics']
  for comparison in report['comparisons']:
    assert comparison['ok'], comparison
    assert comparison['values'] > 0, comparison
    assert comparison['max_abs_diff'] <= comparison['tolerance']
  assert report['unconverted'] == []
  assert 'EQUIVALENT | ranker:model_fn | step 10' in result.stdout
  converted = ' '.join(c['construct'] for c in report['converted'])
  assert 'AdamOptimizer' in converted and 'tf.compat.v1.metrics' in converted


@tf2_lanes
def test_checkpoint_mapping_covers_the_estimator_checkpoint(migrated):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  report = migrated['report']
  estimator = tf.train.load_checkpoint(
      os.path.join(migrated['estimator_dir'], 'model.ckpt-10'))
  names = set(estimator.get_variable_to_shape_map())
  mapping = {m['tf1_name']: m['tf2_key'] for m in report['checkpoint_mapping']}
  assert set(mapping) == names
  converted = tf.train.load_checkpoint(
      os.path.join(migrated['out'], 'checkpoint', 'ckpt-10'))
  for name in ('tower/w', 'tower/mix/kernel', 'tower/bn/moving_mean',
               'tower/w/Adam_1', 'beta2_power', 'global_step'):
    assert (converted.get_tensor(mapping[name]) ==
            estimator.get_tensor(name)).all(), name
  assert 'tower/w ->' in migrated['result'].stdout  # The printed mapping.


@tf2_lanes
def test_generated_sources(migrated):
  out = migrated['out']
  lines = migrated['report']['generated_lines']
  assert set(lines) == {'__init__.py', 'model.py', 'config.py',
                        'optimizer.py', 'tf1_bridge.py', 'train.py'}
  with open(os.path.join(out, 'README.md'), encoding='utf-8') as f:
    assert '--serving_input_fn=ranker:serving_input_fn' in f.read()
  for name in lines:
    with open(os.path.join(out, name), encoding='utf-8') as f:
      source = f.read()
    imported = set()
    for node in ast.walk(ast.parse(source, name)):
      if isinstance(node, ast.Import):
        imported.update(a.name.split('.')[0] for a in node.names)
      elif isinstance(node, ast.ImportFrom) and not node.level:
        imported.add(node.module.split('.')[0])
    assert imported <= {'absl', 'collections', 'contextlib', 'importlib',
                        'inspect', 'os', 'sys', 'tensorflow', 'tf_keras',
                        'time', 'types', 'ranker'}, (name, imported)
    long = [line for line in source.splitlines()
            if len(line) > 80 and ' ' in line.strip()]  # Paths aside.
    assert not long, (name, long)
  with open(os.path.join(out, 'model.py'), encoding='utf-8') as f:
    model = f.read()
  assert 'tf1_bridge.ModelFn(ranker.model_fn' in model
  assert 'V1Adam(' in model and 'tf_keras.metrics.Accuracy' in model


@tf2_lanes
def test_train_py_trains_on_without_the_project(migrated, tmp_path):
  out = migrated['out']
  env = clean_env(out)
  probe = subprocess.run([sys.executable, '-c', 'import trainer'],
                         cwd=str(tmp_path), env=env, capture_output=True,
                         text=True, timeout=60)
  assert probe.returncode != 0 and 'No module named' in probe.stderr
  model_dir = str(tmp_path / 'run')
  result = subprocess.run(
      [sys.executable, os.path.join(out, 'train.py'),
       f'--model_dir={model_dir}', '--steps=14', '--iterations_per_loop=2',
       '--eval_steps=2'], cwd=str(tmp_path), env=env, capture_output=True,
      text=True, timeout=testutil.HANG_TIMEOUT)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'train | step: 12 |' in result.stdout  # From the converted step 10.
  assert 'train | step: 14 |' in result.stdout
  assert 'global_step: 14' in result.stdout
  assert 'accuracy: ' in result.stdout
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  assert tf.train.latest_checkpoint(model_dir).endswith('ckpt-14')
  served = tf.saved_model.load(os.path.join(model_dir, 'saved_model'))
  assert sorted(served.signatures.keys()) == ['score', 'serving_default']
  outputs = served.signatures['serving_default'](
      x=tf.zeros([2, 4]), bucket=tf.constant([0, 2], tf.int64))
  assert sorted(outputs) == ['class', 'probabilities', 'score']


@tf2_lanes
def test_saved_model_has_the_estimator_export_signatures(migrated):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  served = tf.saved_model.load(os.path.join(migrated['out'], 'saved_model'))
  score = served.signatures['score']
  assert sorted(score.structured_input_signature[1]) == ['bucket', 'x']
  assert sorted(score.structured_outputs) == ['outputs']
  comparison = {c['name']: c for c in migrated['report']['comparisons']}
  assert comparison['served outputs']['ok']
  assert 'score, serving_default' in comparison['served outputs']['detail']


@tf2_lanes
def test_verify_catches_a_changed_update(migrated):
  """The incremental path's check: after an edit of model.py that changes
  what training does (here the step no longer advances), --verify says
  NOT EQUIVALENT and which comparison moved."""
  out = migrated['out']
  edited = str(migrated['root'] / 'edited')
  shutil.copytree(out, edited)
  path = os.path.join(edited, 'model.py')
  with open(path, encoding='utf-8') as f:
    source = f.read()
  assert 'recorder.global_step.assign_add(1)' in source
  with open(path, 'w', encoding='utf-8') as f:
    f.write(source.replace('recorder.global_step.assign_add(1)', 'pass'))
  result = run_migrate(RANKER + [f'--model_dir={migrated["estimator_dir"]}',
                                 f'--output_dir={edited}', '--verify'])
  assert result.returncode == 3, result.stderr[-3000:]
  assert 'NOT EQUIVALENT' in result.stdout
  with open(os.path.join(edited, 'report.json'), encoding='utf-8') as f:
    report = json.load(f)
  failed = {c['name'] for c in report['comparisons'] if not c['ok']}
  assert 'training losses' in failed or 'training weights' in failed
  assert report['verified_existing_program'] is True


@tf2_lanes
def test_refuses_a_non_empty_output_dir(migrated):
  result = run_migrate(RANKER + [f'--model_dir={migrated["estimator_dir"]}',
                                 f'--output_dir={migrated["out"]}'])
  assert result.returncode == 1
  assert 'is not empty' in result.stderr.strip().splitlines()[-1]


@pytest.mark.skipif(not testutil.HAS_ESTIMATOR, reason='TF 2.15 only')
def test_says_it_needs_tf_2_16_on_tf_2_15(tmp_path):
  result = run_migrate(RANKER + [f'--model_dir={GOLDEN}',
                                 f'--output_dir={tmp_path / "out"}'])
  assert result.returncode == 1
  assert result.stderr.strip() == (
      'error: trainer.migrate needs TensorFlow >= 2.16 with tf-keras (this '
      'is 2.15): run it on the modern or newest lane. A model_dir written by '
      'TF 2.15\'s Estimator is fine as --model_dir.')
  assert not os.path.exists(tmp_path / 'out')


@tf2_lanes
def test_builtin_mlp_migrates_with_its_code(tmp_path):
  """--model=mlp: the built-in model's code goes into OUT/vendor/, so the
  program runs with the project out of reach; golden/mlp/ is its TF 2.15
  Estimator checkpoint (--mlp_hidden_units=8, 10 steps, --seed=1)."""
  estimator_dir = str(tmp_path / 'estimator')
  shutil.copytree(os.path.join(HERE, 'golden', 'mlp'), estimator_dir)
  out = str(tmp_path / 'mlp_tf2')
  result = run_migrate(['--mlp_hidden_units=8', '--train_batch_size=32',
                        '--eval_batch_size=32', '--seed=1',
                        f'--model_dir={estimator_dir}',
                        f'--output_dir={out}', '--compare_steps=2'])
  assert result.returncode == 0, result.stderr[-3000:]
  with open(os.path.join(out, 'report.json'), encoding='utf-8') as f:
    report = json.load(f)
  assert report['equivalent'] and all(c['ok'] for c in report['comparisons'])
  assert 'vendor/model_fn/mlp.py' in report['generated_lines']
  assert [row[0] for row in report['learning_rate']][:2] == [0, 1]
  env = clean_env(out)
  env['PYTHONPATH'] = os.path.dirname(out)  # No team modules: all vendored.
  ran = subprocess.run(
      [sys.executable, os.path.join(out, 'train.py'),
       f'--model_dir={tmp_path / "run"}', '--steps=12',
       '--iterations_per_loop=2', '--eval_steps=1'], cwd=str(tmp_path),
      env=env, capture_output=True, text=True, timeout=testutil.HANG_TIMEOUT)
  assert ran.returncode == 0, ran.stderr[-3000:]
  assert 'global_step: 12' in ran.stdout and 'top_1_accuracy: ' in ran.stdout
  assert os.path.isdir(tmp_path / 'run' / 'saved_model')
