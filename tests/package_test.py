"""The installable package (pyproject.toml, setup.py, docs/install.md).

Builds the wheel from a copy of the checkout, installs it with --no-deps into
a fresh venv that sees this interpreter's packages (TensorFlow is not
downloaded), and from a directory outside the checkout runs the main job
with the `tpu-trainer` console script and a legacy Estimator program, which
has its own `flags.py` and `trainer` package, through `tpu-trainer-legacy`.

Under Bazel it reads the real source tree (this file's real path), not
runfiles, like build_files_test: its target is tagged `external`.
"""

import ast
import importlib.util
import os
import re
import shutil
import site
import subprocess
import sys
import textwrap
import zipfile

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
GENERIC = {'flags', 'trainer', 'model_fn', 'input_fn'}
# Not part of a build: VCS, venvs, Bazel outputs, scratch, and what the
# wheel leaves out.
SKIP = {'.git', '.venv', '.build', 'tmp', '__pycache__', 'tests', 'bench',
        'scripts', 'third_party'}

TEAM_FLAGS = """\
# The team's own flags.py: a name the installed project must not take.
from absl import flags

FLAGS = flags.FLAGS
flags.DEFINE_string('model_dir', None, 'Checkpoints.')
flags.DEFINE_integer('train_steps', 12, 'Steps.')
"""

TEAM_MODEL = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
  v1 = tf.compat.v1
  w = v1.get_variable('w', [4, 2], initializer=v1.zeros_initializer())
  logits = tf.matmul(features['x'], w)
  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
        'accuracy': v1.metrics.accuracy(labels, tf.argmax(logits, 1))})
  train_op = v1.train.GradientDescentOptimizer(params['lr']).minimize(
      loss, v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
  x = tf.constant([[1., 0, 0, 0], [0, 1., 0, 0]] * 4)
  y = tf.constant([0, 1] * 4)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).repeat().batch(4)
"""

TEAM_MAIN = """\
import sys

from absl import app
import tensorflow as tf

import flags as team_flags  # Their flags.py, beside this file.
from trainer import model  # Their trainer/ package.

FLAGS = team_flags.FLAGS


def main(argv):
  del argv
  estimator = tf.estimator.Estimator(
      model.model_fn, model_dir=FLAGS.model_dir, params={'lr': 0.5})
  estimator.train(model.input_fn, max_steps=FLAGS.train_steps)
  results = estimator.evaluate(model.input_fn, steps=2)
  print('team modules:', team_flags.__file__, model.__file__,
        sys.modules['flags'].__file__, sys.modules['trainer'].__file__)
  print('team result: global_step=%d accuracy=%.2f' % (
      results['global_step'], results['accuracy']))


if __name__ == '__main__':
  app.run(main)
"""


def _setup_module():
  """setup.py as a module (its setup() call runs only as __main__)."""
  spec = importlib.util.spec_from_file_location(
      '_tpu_trainer_setup', os.path.join(REPO_ROOT, 'setup.py'))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_rewrite_imports_moves_the_project_names_only():
  rewrite = _setup_module().rewrite_imports
  source = textwrap.dedent("""\
      import os
      import flags as trainer_flags
      from trainer import registry  # comment
      from model_fn.native import models
      if True:
        from input_fn import (inputs,
                              pipeline)
      from absl import flags
      from .sibling import trainer
      import tensorflow as tf
      s = 'from trainer import x'
      """)
  rewritten = rewrite(source)
  assert rewritten.splitlines() == [
      'import os',
      'from tpu_trainer import flags as trainer_flags',
      'from tpu_trainer.trainer import registry  # comment',
      'from tpu_trainer.model_fn.native import models',
      'if True:',
      '  from tpu_trainer.input_fn import (inputs,',
      '                        pipeline)',
      'from absl import flags',
      'from .sibling import trainer',
      'import tensorflow as tf',
      "s = 'from trainer import x'",
  ]
  assert rewrite(rewritten) == rewritten
  with pytest.raises(ValueError, match='binds'):
    rewrite('import trainer.params\n')


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
  """The wheel built from a copy of the checkout (the checkout is left as
  it is: setuptools writes its scratch into the tree it builds)."""
  tmp = tmp_path_factory.mktemp('package')
  source = tmp / 'checkout'
  shutil.copytree(REPO_ROOT, source, symlinks=False, ignore=lambda d, names: [
      n for n in names if n in SKIP or n.startswith('bazel-')
      or n.endswith('.egg-info')])
  result = subprocess.run(
      [sys.executable, '-m', 'pip', 'wheel', '--no-deps',
       '--no-build-isolation', '--no-cache-dir', '-q', '-w', str(tmp / 'dist'),
       str(source)],
      env=_env(), capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  (path,) = (tmp / 'dist').glob('tpu_trainer-*.whl')
  return path


def _env():
  env = {k: v for k, v in os.environ.items()
         if k not in ('PYTHONPATH', 'PYTHONSAFEPATH', 'PYTHONHOME')}
  env.update(PIP_DISABLE_PIP_VERSION_CHECK='1', PIP_NO_INDEX='1',
             PIP_NO_CACHE_DIR='1')
  return env


def test_wheel_puts_one_distinct_name_into_site_packages(wheel):
  with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    top_level = {n.split('/')[0] for n in names}
    record = [n for n in names if n.endswith('.dist-info/top_level.txt')]
    declared = set(z.read(record[0]).decode().split()) if record else set()
    main = z.read('tpu_trainer/trainer/main.py').decode()
  assert {n for n in top_level if not n.endswith('.dist-info')} == {
      'tpu_trainer'}, sorted(top_level)
  assert not GENERIC & {n.rsplit('.py', 1)[0] for n in top_level}
  assert declared <= {'tpu_trainer'}, declared
  for package in ('tpu_trainer/flags.py', 'tpu_trainer/trainer/legacy/',
                  'tpu_trainer/model_fn/', 'tpu_trainer/input_fn/',
                  'tpu_trainer/configs/resnet18_digits.cfg',
                  'tpu_trainer/trainer/facade/inventory.json',
                  'tpu_trainer/data/digits/raw/train-00000-of-00004',
                  'tpu_trainer/data/digits/jpeg/validation-00000-of-00002'):
    assert any(n.startswith(package) for n in names), package
  assert not [n for n in names if n.endswith(('/BUILD', '_test.py'))]
  # No import of a generic name is left in any module.
  with zipfile.ZipFile(wheel) as z:
    for name in names:
      if not name.endswith('.py'):
        continue
      for node in ast.walk(ast.parse(z.read(name), name)):
        if isinstance(node, ast.Import):
          modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
          modules = [node.module]
        else:
          continue
        assert not GENERIC & {m.split('.')[0] for m in modules}, (
            name, node.lineno)
  assert 'from tpu_trainer import flags as trainer_flags' in main


@pytest.fixture(scope='module')
def venv(wheel, tmp_path_factory):
  """A fresh venv with the wheel installed (--no-deps); this interpreter's
  site-packages (TensorFlow, absl, ...) after its own, through a .pth file
  (--system-site-packages alone gives the base interpreter's, not a venv's).
  """
  path = tmp_path_factory.mktemp('venv') / 'env'
  subprocess.run([sys.executable, '-m', 'venv', '--system-site-packages',
                  '--without-pip', str(path)], check=True, timeout=120)
  python = path / 'bin' / 'python'
  own = subprocess.run(
      [str(python), '-c', 'import sysconfig; print(sysconfig.get_paths()'
       '["purelib"])'], capture_output=True, text=True, check=True,
      timeout=60).stdout.strip()
  parents = [p for p in site.getsitepackages() if os.path.isdir(p)]
  with open(os.path.join(own, '_parent_site_packages.pth'), 'w') as f:
    f.write(''.join(f'{p}\n' for p in parents))
  result = subprocess.run(
      [str(python), '-m', 'pip', 'install', '--no-deps', '-q', str(wheel)],
      env=_env(), capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  return path


def _run(venv, command, cwd, timeout=300, env=None):
  return subprocess.run(
      [str(venv / 'bin' / command[0])] + command[1:], cwd=cwd,
      env=dict(_env(), **(env or {})), capture_output=True, text=True,
      timeout=timeout, check=False)


def _requirements(wheel):
  """{extra ('' for a bare install): {distribution: specifier}} of the
  wheel's METADATA."""
  with zipfile.ZipFile(wheel) as z:
    (name,) = [n for n in z.namelist() if n.endswith('.dist-info/METADATA')]
    metadata = z.read(name).decode()
  found = {}
  for line in re.findall(r'^Requires-Dist: (.+)$', metadata, re.M):
    requirement, _, marker = line.partition(';')
    extra = re.search(r'extra == "(\w+)"', marker)
    dist, specifier = re.match(r'([\w.-]+)\s*\(?([^)]*)\)?',
                               requirement.strip()).groups()
    found.setdefault(extra.group(1) if extra else '', {})[
        dist.lower().replace('_', '-')] = ','.join(
            sorted(s.strip() for s in specifier.split(',') if s.strip()))
  return found


def test_a_bare_install_brings_the_keras_2_of_its_tensorflow(wheel):
  """Without an extra, pip resolves TensorFlow and tf-keras (whose release
  pins TensorFlow's minor) in one range: the pair works (before: TF 2.21
  without tf-keras, nothing ran). Each tfNNN extra pins both to TF 2.NN."""
  requirements = _requirements(wheel)
  bare = requirements['']
  assert bare['tf-keras'] == bare['tensorflow'] == '<2.22,>=2.15', bare
  extras = {e: r for e, r in requirements.items() if re.match(r'tf2\d+$', e)}
  assert len(extras) == 7, sorted(extras)
  for extra, pinned in extras.items():
    minor = extra[3:]
    assert pinned['tensorflow'].startswith(f'~=2.{minor}.'), (extra, pinned)
    assert pinned['tf-keras'] == f'~=2.{minor}.0', (extra, pinned)


def test_main_job_runs_from_outside_the_checkout(venv, tmp_path):
  work = tmp_path / 'elsewhere'
  work.mkdir()
  result = _run(venv, [
      'tpu-trainer', '--train_steps=20', '--steps_per_eval=20',
      '--iterations_per_loop=10', '--eval_steps=2',
      f'--model_dir={tmp_path / "model"}'], cwd=work)
  assert result.returncode == 0, result.stderr[-3000:]
  results = dict(line.split(': ', 1) for line in result.stdout.splitlines()
                 if ': ' in line)
  assert results['global_step'] == '20', result.stdout
  assert float(results['top_1_accuracy']) > 0.3, result.stdout
  # The embedded digits came from the package, not from the checkout.
  packaged = os.path.join('tpu_trainer', 'data', 'digits', 'raw')
  assert packaged in result.stderr, result.stderr[-3000:]
  checkout = re.findall(re.escape(REPO_ROOT) + r'/(?!\.venv/)\S*',
                        result.stdout + result.stderr)  # (TF's venv may be.)
  assert not checkout, checkout
  # --flagfile names a packaged config from any directory; its relative
  # --data_dir is the package's.
  resolved = _run(venv, ['python', '-c', (
      'from tpu_trainer import cli; print(cli.resolve_packaged_flagfiles('
      '["--flagfile=configs/resnet18_digits.cfg", "--train_steps=5"]))')],
                  cwd=work)
  assert resolved.returncode == 0, resolved.stderr[-3000:]
  args = ast.literal_eval(resolved.stdout.strip())
  assert '--model=resnet' in args and args[-1] == '--train_steps=5', args
  (data_dir,) = [a for a in args if a.startswith('--data_dir=')]
  assert data_dir.endswith(os.path.join('tpu_trainer', 'data', 'digits',
                                        'jpeg')), data_dir
  assert os.path.isdir(data_dir.split('=', 1)[1]), data_dir

def test_legacy_program_with_its_own_flags_and_trainer_runs(venv, tmp_path):
  program = tmp_path / 'team'
  (program / 'trainer').mkdir(parents=True)
  (program / 'flags.py').write_text(TEAM_FLAGS)
  (program / 'trainer' / '__init__.py').write_text('')
  (program / 'trainer' / 'model.py').write_text(TEAM_MODEL)
  (program / 'main.py').write_text(TEAM_MAIN)
  result = _run(venv, [
      'tpu-trainer-legacy', '--cpu_fallback', 'main.py', '--train_steps=12',
      f'--model_dir={tmp_path / "team_model"}'], cwd=program)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'team result: global_step=12 accuracy=1.00' in result.stdout, (
      result.stdout + result.stderr[-3000:])
  (modules,) = [line.split()[2:] for line in result.stdout.splitlines()
                if line.startswith('team modules:')]
  assert modules == [str(program / 'flags.py'),
                     str(program / 'trainer' / 'model.py'),
                     str(program / 'flags.py'),
                     str(program / 'trainer' / '__init__.py')], modules
  assert 'trainer.legacy' in result.stderr  # The launcher's start-up line.


# Each console script of pyproject.toml -> (a flag its --help must list,
# the `python -m` form it stands for).
SCRIPT_FLAGS = {
    'tpu-trainer': ('--train_steps', 'trainer.main'),
    'tpu-trainer-legacy': ('--cpu_fallback', 'trainer.legacy'),
    'tpu-trainer-verify-migration': ('--runners', 'trainer.verify_migration'),
    'tpu-trainer-memory': ('--num_slices', 'trainer.memory'),
    'tpu-trainer-convert': ('--checkpoint', 'trainer.runners.native.convert'),
    'tpu-trainer-migrate': ('--output_dir', 'trainer.migrate'),
}


def test_every_console_script_has_a_help_check():
  with open(os.path.join(REPO_ROOT, 'pyproject.toml')) as f:
    scripts = re.findall(r'^(tpu-trainer[\w-]*) = ', f.read(), re.M)
  assert sorted(scripts) == sorted(SCRIPT_FLAGS)


@pytest.mark.parametrize('script', sorted(SCRIPT_FLAGS))
def test_console_script_help_lists_flags_under_its_name(venv, tmp_path,
                                                        script):
  # (Before: exit 1, no flag listed, usage naming `python -m trainer.main`.)
  flag, module = SCRIPT_FLAGS[script]
  result = _run(venv, [script, '--help'], cwd=tmp_path)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.startswith(f'usage: {script} '), result.stdout[:500]
  usage = result.stdout.split('\n  --', 1)[0]  # Before the flags' help.
  assert not re.search(rf'python -m {re.escape(module)}\b', usage), usage
  assert re.search(rf'^\s+{flag}\b', result.stdout, re.M), (
      result.stdout[-3000:])


# Each console script -> a command line its flag parsing refuses, and the
# exit status it refuses it with.
BAD_FLAGS = {
    'tpu-trainer': (['--train_batch_size=0'], 1),
    'tpu-trainer-legacy': (['--no_such_launcher_flag'], 2),
    'tpu-trainer-verify-migration': (['--steps=0'], 1),
    'tpu-trainer-memory': (['--train_batch_size=0'], 1),
    'tpu-trainer-convert': (['--checkpoint=x'], 1),  # --output missing.
    'tpu-trainer-migrate': (['--compare_steps=0'], 1),
}


@pytest.mark.parametrize('script', sorted(SCRIPT_FLAGS))
def test_help_and_flag_errors_come_before_tensorflow_is_imported(
    venv, tmp_path, script):
  """--help and a flag error never wait for TensorFlow's import (13-30 s
  on a loaded machine, before): Python's own import log shows none."""
  bad, status = BAD_FLAGS[script]
  for args, expected in (['--help'], 0), (bad, status):
    result = _run(venv, [script] + args, cwd=tmp_path,
                  env={'PYTHONPROFILEIMPORTTIME': '1'})
    assert result.returncode == expected, (args, result.stderr[-3000:])
    imported = re.findall(r'^import time:.*\| +(\S+)$', result.stderr, re.M)
    assert imported, 'no import log'  # The check itself works.
    assert not [m for m in imported if m.split('.')[0] == 'tensorflow'], (
        script, args)
