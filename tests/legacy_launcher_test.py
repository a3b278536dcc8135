"""python -m trainer.legacy: command line, program environment, bad input,
--cpu_fallback and disable_v2_behavior, in subprocesses on every lane."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests import testutil
from trainer.legacy import launcher

# A program that reports what it was given, as `python prog.py` would.
ECHO_PROGRAM = '''
import os, sys
from absl import app, flags
import sibling  # Next to the program: its directory is on sys.path.
FLAGS = flags.FLAGS
flags.DEFINE_bool('cpu_fallback', False, 'The program\\'s own flag.')
flags.DEFINE_integer('exit_status', 0, 'Exit status.')

def main(argv):
  print('argv0=%s rest=%s' % (os.path.basename(sys.argv[0]), argv[1:]))
  print('name=%s own_cpu_fallback=%s sibling=%s' % (
      __name__, FLAGS.cpu_fallback, sibling.VALUE))
  return FLAGS.exit_status

if __name__ == '__main__':
  app.run(main)
'''

RESOLVER_PROGRAM = '''
from absl import app, flags
import tensorflow as tf
FLAGS = flags.FLAGS
flags.DEFINE_string('tpu', None, 'TPU name.')

def main(_):
  resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
      FLAGS.tpu or '')
  print('master=%r' % resolver.master())

if __name__ == '__main__':
  app.run(main)
'''

GRAPH_MODE_PROGRAM = '''
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
print('eager=%s' % tf.executing_eagerly())
x = tf.placeholder(tf.float32, [None])
print('placeholder ok')
'''


def _launch(args, cwd=testutil.REPO_ROOT):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=testutil.REPO_ROOT)
  return subprocess.run([sys.executable, '-m', 'trainer.legacy'] + args,
                        cwd=cwd, env=env, capture_output=True, text=True,
                        timeout=600)


def _write(path, text):
  path.write_text(textwrap.dedent(text))
  return str(path)


def test_parse_separates_launcher_flags_from_the_program():
  assert launcher.parse(['x', '--cpu_fallback', 'p.py', '--cpu_fallback',
                         '-m']) == (True, 'path', 'p.py',
                                    ['--cpu_fallback', '-m'])
  assert launcher.parse(['x', '-m', 'a.b', '--f=1']) == (
      False, 'module', 'a.b', ['--f=1'])
  with pytest.raises(launcher.UsageError, match="unknown launcher flag "
                     "'--model_dir=x'"):
    launcher.parse(['x', '--model_dir=x', 'p.py'])
  with pytest.raises(launcher.UsageError, match='no program given'):
    launcher.parse(['x', '--cpu_fallback'])
  with pytest.raises(launcher.UsageError, match='-m needs a module'):
    launcher.parse(['x', '-m'])


def test_program_runs_as_main_with_its_own_flags_argv_and_path(tmp_path):
  (tmp_path / 'sibling.py').write_text('VALUE = 7\n')
  program = _write(tmp_path / 'echo_main.py', ECHO_PROGRAM)
  result = _launch(['--cpu_fallback', program, '--cpu_fallback', 'extra',
                    '--exit_status=3'], cwd=str(tmp_path.parent))
  assert result.returncode == 3, result.stderr[-2000:]
  assert "argv0=echo_main.py rest=['extra']" in result.stdout
  assert 'name=__main__ own_cpu_fallback=True sibling=7' in result.stdout


def test_module_runs_as_main(tmp_path):
  package = tmp_path / 'team'
  package.mkdir()
  (package / '__init__.py').write_text('')
  (tmp_path / 'sibling.py').write_text('VALUE = 8\n')
  _write(package / 'main.py', ECHO_PROGRAM)
  result = _launch(['-m', 'team.main', 'x'], cwd=str(tmp_path))
  assert result.returncode == 0, result.stderr[-2000:]
  assert "argv0=main.py rest=['x']" in result.stdout
  assert 'name=__main__ own_cpu_fallback=False sibling=8' in result.stdout


def test_bad_input_names_the_file_module_or_flag(tmp_path):
  missing = str(tmp_path / 'nope_main.py')
  result = _launch([missing])
  assert result.returncode == 2
  assert f'trainer.legacy: error: program file {missing} does not exist' in (
      result.stderr)
  result = _launch(['-m', 'no_such_team.main'])
  assert result.returncode == 2
  assert "cannot import module 'no_such_team.main'" in result.stderr
  result = _launch(['--tpu=x', missing])
  assert result.returncode == 2 and "unknown launcher flag '--tpu=x'" in (
      result.stderr)


def test_cpu_fallback_turns_a_missing_tpu_into_no_tpu(tmp_path):
  program = _write(tmp_path / 'resolver_main.py', RESOLVER_PROGRAM)
  without = _launch([program])
  assert without.returncode != 0
  assert 'Please provide a TPU Name to connect to.' in without.stderr
  with_flag = _launch(['--cpu_fallback', program])
  assert with_flag.returncode == 0, with_flag.stderr[-2000:]
  assert "master=''" in with_flag.stdout
  assert with_flag.stderr.count(
      "--cpu_fallback: TPUClusterResolver('') found no TPU (ValueError: "
      'Please provide a TPU Name to connect to.). Running WITHOUT a TPU') == 1


def test_disable_v2_behavior_under_the_facade(tmp_path):
  program = _write(tmp_path / 'graph_main.py', GRAPH_MODE_PROGRAM)
  result = _launch([program])
  if testutil.HAS_ESTIMATOR:  # The real Estimator: nothing is changed.
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'eager=False' in result.stdout
    assert 'placeholder ok' in result.stdout
    return
  assert result.returncode == 1
  assert 'eager=True' in result.stdout
  assert result.stderr.count(
      'tf.compat.v1.disable_v2_behavior() ignored') == 1
  assert 'tf.placeholder() is not compatible with eager execution' in (
      result.stderr)
  assert ('trainer.legacy: the program called '
          'tf.compat.v1.disable_v2_behavior(), which the facade ignored' in
          result.stderr)
