"""Errors a user can act on: a dangling symbolic link among the data files,
a model_fn that returns a dict, the tf-keras extra missing. The first
line a user reads names the cause and the fix, on both paths (before: a
traceback, `'dict' object has no attribute '_replace'`, a 40-line
ImportError)."""

import os
import shutil
import sys

import pytest
import tensorflow as tf

from tests import testutil
from tests.faults import cases
from tests.faults import faultutil

_USER_MODEL = '''
import tensorflow as tf


def model_fn(features, labels, mode, params):
  logits = tf.compat.v1.layers.dense(
      tf.reshape(features['image'], [-1, 784]), 10)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return {'loss': loss, 'train_op': train_op}  # A misuse: not a spec.
'''


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_dangling_symlink_among_the_data_files(path_name, fault_data,
                                                 tmp_path):
  path = faultutil.PATHS[path_name]
  data_dir = str(tmp_path / 'data')
  shutil.copytree(fault_data, data_dir)
  link = os.path.join(data_dir, 'train-00001-of-00002')
  os.remove(link)
  os.symlink('/nonexistent/train-00001-of-00002', link)
  result, seconds = faultutil.run(path.command(tmp_path / 'model', data_dir))
  assert result.returncode == cases.exit_status('dangling-symlink'), (
      result.stderr[-3000:])
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(
          path.name, 'dangling-symlink', FILE=link,
          TARGET='/nonexistent/train-00001-of-00002'))
  assert 'Traceback' not in result.stderr
  faultutil.Record(path.name).add('a dangling symlink among the data files',
                                  result.returncode, seconds, line, True)


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_model_fn_returning_a_dict(path_name, fault_data, tmp_path):
  if path_name == 'launcher':
    command = faultutil.launcher_command([
        f'--model_dir={tmp_path}/model', f'--data_dir={fault_data}',
        '--mode=dict_model_fn'])
    env = None
  else:
    (tmp_path / 'user_model.py').write_text(_USER_MODEL)
    command = faultutil.main_command([
        f'--model_dir={tmp_path}/model', f'--data_dir={fault_data}',
        '--model=user_model:model_fn', '--mode=train', '--train_steps=5',
        f'--train_batch_size={faultutil.BATCH}'])
    env = {'PYTHONPATH': str(tmp_path)}
  result, seconds = faultutil.run(command, env=env)
  assert result.returncode == cases.exit_status('dict-model-fn'), (
      result.stderr[-3000:])
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(path_name, 'dict-model-fn'))
  assert 'dict' in line, line
  assert 'Traceback' not in result.stderr
  faultutil.Record(path_name).add('a model_fn that returns a dict',
                                  result.returncode, seconds, line, True)


_WITHOUT_TF_KERAS = '''
import runpy, sys
sys.modules['tf_keras'] = None  # As if the extra were not installed.
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)
'''


@pytest.mark.skipif(testutil.HAS_ESTIMATOR,
                    reason='TF 2.15 has Keras 2 built in: no extra needed')
@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_the_tf_keras_extra_missing(path_name, fault_data, tmp_path):
  path = faultutil.PATHS[path_name]
  command = path.command(tmp_path / 'model', fault_data)
  assert command[1] == '-m'
  result, seconds = faultutil.run(
      [sys.executable, '-c', _WITHOUT_TF_KERAS] + command[2:])
  assert result.returncode == cases.exit_status('no-tf-keras'), (
      result.stderr[-3000:])
  major, minor = tf.__version__.split('.')[:2]
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(
          path_name, 'no-tf-keras', VERSION=f'{major}.{minor}',
          EXTRA=f'tf{major}{minor}'))
  assert 'Traceback' not in result.stderr
  faultutil.Record(path_name).add('the tf-keras extra missing',
                                  result.returncode, seconds, line, True)
