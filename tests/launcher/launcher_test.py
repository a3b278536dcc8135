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

# disable_v2_behavior(), an Estimator, then graph-mode code of its own
# (a placeholder, a Session, .eval) on the predictions, as a TF1 main does.
GRAPH_MODE_PROGRAM = '''
import sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()

def model_fn(features, labels, mode):
  w = tf.get_variable('w', [1, 1])
  y = tf.matmul(features['x'], w)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={'y': y})
  loss = tf.losses.mean_squared_error(labels, y)
  step = tf.train.GradientDescentOptimizer(0.01).minimize(
      loss, tf.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step)

def input_fn():
  x = np.arange(8, dtype=np.float32).reshape(8, 1)
  return tf.data.Dataset.from_tensor_slices(({'x': x}, 2 * x)).batch(4)

est = tf.estimator.Estimator(model_fn, model_dir=sys.argv[1],
                             config=tf.estimator.RunConfig(tf_random_seed=3))
est.train(input_fn, steps=4)
predictions = np.concatenate([p['y'] for p in est.predict(input_fn)])
values = tf.placeholder(tf.float32, [None])
with tf.Session() as session:
  total = tf.reduce_sum(values).eval(session=session,
                                     feed_dict={values: predictions})
print('eager=%s predictions=%d total=%.5f w=%.5f' % (
    tf.executing_eagerly(), len(predictions), total,
    est.get_variable_value('w')[0, 0]))
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
                                    ['--cpu_fallback', '-m'], 10, 60, False)
  assert launcher.parse(['x', '--peer_timeout_secs=3', '-m', 'a.b',
                         '--f=1']) == (False, 'module', 'a.b', ['--f=1'], 3,
                                       60, False)
  assert launcher.parse(['x', '--ps_timeout_secs=0',
                         'p.py']).ps_timeout_secs == 0
  assert launcher.parse(['x', '--skip_corrupt_records', 'p.py',
                         '--skip_corrupt_records']) == (
                             False, 'path', 'p.py',
                             ['--skip_corrupt_records'], 10, 60, True)
  with pytest.raises(launcher.UsageError, match='give whole seconds'):
    launcher.parse(['x', '--peer_timeout_secs=soon', 'p.py'])
  with pytest.raises(launcher.UsageError, match='wait for a lost ps forever'):
    launcher.parse(['x', '--ps_timeout_secs=-1', 'p.py'])
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


def test_disable_v2_behavior_graph_code_around_estimator_calls(tmp_path):
  """The program keeps TF1 behaviour for its own graph code, as on TF 2.15;
  its Estimator calls run there too (the same result on both lanes is
  checked by tests/conformance: here, that it runs to the end)."""
  program = _write(tmp_path / 'graph_main.py', GRAPH_MODE_PROGRAM)
  result = _launch([program, str(tmp_path / 'model')])
  assert result.returncode == 0, result.stderr[-2000:]
  line = [l for l in result.stdout.splitlines() if l.startswith('eager=')]
  assert line and line[0].startswith('eager=False predictions=8 total=')
  fields = dict(f.split('=') for f in line[0].split())
  # The program's own Session summed the predictions x * w over x = 0..7.
  assert float(fields['total']) == pytest.approx(28 * float(fields['w']),
                                                 rel=1e-4, abs=1e-4)


# No absl app.run: TF's logger is the only handler of its lines.
LOGGING_PROGRAM = '''
import sys
import numpy as np
import tensorflow.compat.v1 as tf
tf.logging.set_verbosity(tf.logging.INFO)

def model_fn(features, labels, mode):
  w = tf.get_variable('w', [1, 1])
  loss = tf.losses.mean_squared_error(labels, tf.matmul(features['x'], w))
  step = tf.train.GradientDescentOptimizer(0.01).minimize(
      loss, tf.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step)

def input_fn():
  x = np.arange(8, dtype=np.float32).reshape(8, 1) / 3
  return tf.data.Dataset.from_tensor_slices(({'x': x}, 2 * x)).batch(4)

est = tf.estimator.Estimator(model_fn, model_dir=sys.argv[1])
est.train(input_fn, steps=2)
tf.logging.info('PROGRAM-LINE')
print('loss=%s' % est.evaluate(input_fn)['loss'])
'''


def test_log_lines_print_once_with_estimators_digits(tmp_path):
  program = _write(tmp_path / 'logging_main.py', LOGGING_PROGRAM)
  result = _launch([program, str(tmp_path / 'model')])
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stderr.count('INFO:tensorflow:PROGRAM-LINE') == 1
  saved = [l for l in result.stderr.splitlines()
           if 'Saving dict for global step 2:' in l]
  assert len(saved) == 1, result.stderr[-3000:]
  loss, = [l.split('=', 1)[1] for l in result.stdout.splitlines()
           if l.startswith('loss=')]
  assert f'loss = {loss}' in saved[0]  # str(np.float32), as Estimator logs.
