"""The Estimator API's known failures, as a new user meets them (issue 39):
a canned-Estimator program (tests/faults/canned_program.py: DNNLinear-
CombinedClassifier, a vocabulary-file and a bucketized column, CSV input,
train_and_evaluate with an exporter) through the launcher, on TF 2.15 the
real Estimator and on later TensorFlow the facade; and trainer.main where
the same cause can occur. Each run: exit 1, the first line a user reads
names the cause and the fix (before: a 100-300 line traceback first, and
trainer.main trained on labels beyond --num_classes with exit 0), and what
was trained is still there and loads.
"""

import glob
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from tests.faults import cases
from tests.faults import faultutil

STEPS = ['--max_steps=4']

_USER_MODEL = '''
import tensorflow as tf


def own_error(features, labels, mode, params):
  raise ValueError('hidden sizes must be a list, got 12')


def feature_column(features, labels, mode, params):
  columns = [tf.feature_column.numeric_column('x2')]
  net = tf.compat.v1.feature_column.input_layer(features, columns)
  logits = tf.compat.v1.layers.dense(net, 10)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
      mode, loss=loss, train_op=train_op)
'''
_MAIN_TINY = ['--train_steps=4', '--iterations_per_loop=2',
              '--steps_per_eval=4', '--eval_steps=1',
              f'--train_batch_size={faultutil.BATCH}',
              f'--eval_batch_size={faultutil.BATCH}']


@pytest.fixture(scope='module')
def canned_data(tmp_path_factory):
  """(data file, vocabulary file) of the canned program."""
  return faultutil.make_canned_data(str(tmp_path_factory.mktemp('canned')))


def _canned(model_dir, data, *extra, vocabulary=None):
  data_file, vocabulary_file = data
  return faultutil.canned_command(
      [f'--model_dir={model_dir}', f'--data_file={data_file}',
       f'--vocabulary_file={vocabulary or vocabulary_file}'] + STEPS +
      list(extra))


def _user_model(tmp_path):
  (tmp_path / 'user_model.py').write_text(_USER_MODEL)
  return {'PYTHONPATH': str(tmp_path)}


def _checked(result, key, path, seconds, case, nothing_lost=True, **values):
  """Exit status and first line of `result` as cases.py's `key` says;
  records the outcome; returns the first line."""
  assert result.returncode == cases.exit_status(key), result.stderr[-3000:]
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(path, key, **values))
  faultutil.Record(path).add(case, result.returncode, seconds, line,
                             nothing_lost)
  return line


def _no_checkpoint(model_dir):
  return not glob.glob(os.path.join(str(model_dir), '*.index'))


@pytest.mark.parametrize('path_name,replicas', [
    ('launcher', 1),
    pytest.param('launcher', 2, marks=testutil.facade_lanes),
    ('main', 1)])
def test_a_feature_column_whose_key_the_input_fn_lacks(
    path_name, replicas, canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  if path_name == 'launcher':
    result, seconds = faultutil.run(
        _canned(model_dir, canned_data, '--fault=missing_feature',
                f'--replicas={replicas}'),
        env={'TF_CPP_MIN_LOG_LEVEL': None})  # As a user starts it.
    keys, source = 'color, x1', 'input_fn'
  else:
    result, seconds = faultutil.run(faultutil.main_command(
        [f'--model_dir={model_dir}', '--model=user_model:feature_column'] +
        _MAIN_TINY), env=dict(_user_model(tmp_path), TF_CPP_MIN_LOG_LEVEL=None))
    keys, source = 'image', "--input's input_fn"
  _checked(result, 'missing-feature', path_name, seconds,
           f'a feature column\'s key missing ({replicas} replica(s))',
           KEY='x2', KEYS=keys, SOURCE=source)
  assert 'Traceback' not in result.stderr
  faultutil.assert_quiet_start(result.stderr)
  assert _no_checkpoint(model_dir)


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_labels_beyond_the_classes(path_name, canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  if path_name == 'launcher':
    result, seconds = faultutil.run(
        _canned(model_dir, canned_data, '--fault=label_beyond'))
    key, values = 'label-range', {'MAX': 1, 'N': 2}
  else:
    result, seconds = faultutil.run(faultutil.main_command(
        [f'--model_dir={model_dir}', '--num_classes=5'] + _MAIN_TINY))
    key, values = 'num-classes', {'MAX': 4, 'N': 5}
  _checked(result, key, path_name, seconds, 'labels >= the classes',
           **values)
  assert 'Traceback' not in result.stderr
  faultutil.assert_every_checkpoint_loads(model_dir)


def test_string_labels_without_a_label_vocabulary(canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  result, seconds = faultutil.run(
      _canned(model_dir, canned_data, '--fault=string_labels'))
  _checked(result, 'string-labels', 'launcher', seconds,
           'string labels without label_vocabulary')
  assert 'Traceback' not in result.stderr
  faultutil.assert_every_checkpoint_loads(model_dir)


def test_a_vocabulary_file_that_does_not_exist(canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  missing = str(tmp_path / 'colors-v2.txt')
  result, seconds = faultutil.run(
      _canned(model_dir, canned_data, vocabulary=missing))
  _checked(result, 'missing-vocabulary', 'launcher', seconds,
           'a vocabulary file that does not exist', FILE=missing)
  assert 'Traceback' not in result.stderr
  assert _no_checkpoint(model_dir)


def test_a_dangling_csv_data_file(canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  link = str(tmp_path / 'data.csv')
  os.symlink('/nonexistent/data.csv', link)
  result, seconds = faultutil.run(
      _canned(model_dir, (link, canned_data[1])))
  _checked(result, 'dangling-symlink', 'launcher', seconds,
           'a data file that is a dangling link (CSV)', WHAT='data file',
           FILE=link, TARGET='/nonexistent/data.csv')
  assert 'Traceback' not in result.stderr
  # Read at the first step, after Estimator's step-0 checkpoint.
  faultutil.assert_every_checkpoint_loads(model_dir)
  assert faultutil.latest_step(model_dir) == 0


def _non_finite(path):
  reader = tf.train.load_checkpoint(path)
  return [n for n, d in reader.get_variable_to_dtype_map().items()
          if d.is_floating and not np.isfinite(reader.get_tensor(n)).all()]


def test_nan_in_the_features(tmp_path):
  """Estimator saves the checkpoint of the step whose loss is NaN before
  its NanTensorHook stops training (TF 2.15 does too): the line names that
  checkpoint and the newest finite one, from which training resumes."""
  data = faultutil.make_canned_data(str(tmp_path / 'data'), nan_from=8)
  model_dir = str(tmp_path / 'model')
  result, seconds = faultutil.run(_canned(model_dir, data))
  line = _checked(result, 'nan-features', 'launcher', seconds,
                  'NaN in the features', STEP=1)
  assert 'Traceback' not in result.stderr
  named = re.search(r'(model\.ckpt-\d+), saved after that step, holds? NaN '
                    r'.*to resume from (model\.ckpt-\d+)', line)
  assert named, line
  assert _non_finite(os.path.join(model_dir, named.group(1)))
  assert not _non_finite(os.path.join(model_dir, named.group(2)))


@pytest.fixture(scope='module')
def canned_model_dir(canned_data, tmp_path_factory):
  """A model_dir the canned program trained (4 steps); tests copy it."""
  model_dir = str(tmp_path_factory.mktemp('canned_trained') / 'model')
  result, _ = faultutil.run(_canned(model_dir, canned_data, '--mode=train'))
  assert result.returncode == 0, result.stderr[-3000:]
  return model_dir


def _copy(source, tmp_path):
  target = str(tmp_path / 'model')
  shutil.copytree(source, target)
  return target


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_an_export_into_a_read_only_directory(path_name, canned_data,
                                              canned_model_dir, trained_copy,
                                              fault_data, tmp_path):
  with faultutil.read_only_dir() as read_only:
    if read_only is None:
      pytest.skip('no read-only directory can be made here')
    export_dir = os.path.join(read_only, 'exports')
    if path_name == 'launcher':
      model_dir = _copy(canned_model_dir, tmp_path)
      command = _canned(model_dir, canned_data, '--mode=export',
                        f'--export_dir={export_dir}')
      knob = "export_saved_model's export_dir_base (or the exporter's)"
    else:
      model_dir = trained_copy(faultutil.MAIN)
      command = faultutil.MAIN.command(model_dir, fault_data, '--mode=export',
                                       f'--export_dir={export_dir}')
      knob = '--export_dir'
    before = sorted(os.listdir(model_dir))
    result, seconds = faultutil.run(command)
    assert not os.path.exists(export_dir)
  _checked(result, 'export-read-only', path_name, seconds,
           'export_saved_model into a read-only directory', DIR=export_dir,
           KNOB=knob)
  assert 'Traceback' not in result.stderr
  assert sorted(os.listdir(model_dir)) == before
  assert faultutil.assert_every_checkpoint_loads(model_dir) > 0


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_checkpoint_that_does_not_read(path_name, canned_data,
                                         canned_model_dir, trained_copy,
                                         fault_data, tmp_path):
  if path_name == 'launcher':
    model_dir = _copy(canned_model_dir, tmp_path)
    command = _canned(model_dir, canned_data, '--mode=export',
                      f'--export_dir={tmp_path}/exports')
  else:
    model_dir = trained_copy(faultutil.MAIN)
    command = faultutil.MAIN.command(model_dir, fault_data, '--mode=export',
                                     f'--export_dir={tmp_path}/exports')
  latest = tf.train.latest_checkpoint(model_dir)
  (data,) = glob.glob(latest + '.data-*')
  with open(data, 'rb') as f:
    flipped = bytes(b ^ 0x5a for b in f.read())  # Same size: complete.
  with open(data, 'wb') as f:
    f.write(flipped)
  result, seconds = faultutil.run(command)
  _checked(result, 'unreadable-checkpoint', path_name, seconds,
           'a checkpoint whose bytes do not read', CKPT=latest)
  assert 'Traceback' not in result.stderr
  assert not glob.glob(f'{tmp_path}/exports/*/saved_model.pb')
  state = tf.train.get_checkpoint_state(model_dir)
  for path in state.all_model_checkpoint_paths:
    if path != latest:  # The others read in full.
      assert not _non_finite(path)


@pytest.mark.parametrize('path_name,replicas', [
    ('launcher', 1),
    pytest.param('launcher', 2, marks=testutil.facade_lanes),
    ('main', 1)])
def test_the_programs_own_exception_keeps_its_traceback(
    path_name, replicas, canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  if path_name == 'launcher':
    result, seconds = faultutil.run(
        _canned(model_dir, canned_data, '--fault=own_error',
                f'--replicas={replicas}'))
    values = {'FILE': 'canned_program.py', 'FUNCTION': 'fn',
              'MESSAGE': f'no rows selected from {canned_data[0]}'}
  else:
    result, seconds = faultutil.run(faultutil.main_command(
        [f'--model_dir={model_dir}', '--model=user_model:own_error'] +
        _MAIN_TINY), env=_user_model(tmp_path))
    values = {'FILE': 'user_model.py', 'FUNCTION': 'own_error',
              'MESSAGE': 'hidden sizes must be a list, got 12'}
  _checked(result, 'own-exception', path_name, seconds,
           f'the program\'s own exception ({replicas} replica(s))',
           TYPE='ValueError', **values)
  after = result.stderr.split(faultutil.first_line_read(result.stderr), 1)[1]
  traceback = after[after.index('Traceback (most recent call last):'):]
  assert re.search(rf'{values["FILE"]}", line \d+, in {values["FUNCTION"]}',
                   traceback), traceback[-2000:]
  assert traceback.rstrip().endswith(f'ValueError: {values["MESSAGE"]}')
  if path_name == 'launcher':  # From the program's first frame on.
    first_frame = re.search(r'File "([^"]+)"', traceback).group(1)
    assert first_frame == faultutil.CANNED_PROGRAM, traceback[:1000]
  assert _no_checkpoint(model_dir)
