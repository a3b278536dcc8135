"""Bad input fails with an error naming the file, feature, variable or flag."""

import json
import os
import shutil

import pytest
import tensorflow as tf

from input_fn import corrupt_records
from input_fn import features as feature_lib
from input_fn import tfrecord
from model_fn import warm_start
from model_fn.spec import ModeKeys
from tests import testutil
from trainer import params as params_lib
from trainer.guard import fingerprint as run_fingerprint
from trainer.guard import lock as model_dir_lock
from trainer.runners import registry as runners
from trainer.runtime import run_guard
from trainer.models import builtin
from trainer.models import inputs as run_inputs

CORRUPT_FILE = 'train-00002-of-00004'
CORRUPT_AT = 5000  # Byte flipped: inside the file's 15th or so record.


def _corrupt_copy(tmp_path, name=CORRUPT_FILE):
  """A copy of the raw digits with one byte of `name` flipped."""
  data_dir = str(tmp_path / 'data')
  shutil.copytree(testutil.DIGITS_RAW, data_dir)
  path = os.path.join(data_dir, name)
  data = bytearray(open(path, 'rb').read())
  data[CORRUPT_AT] ^= 0xFF
  with open(path, 'wb') as f:
    f.write(bytes(data))
  return data_dir, path


def _records_before(path, offset):
  """Records of the original file `path` that end before byte `offset`."""
  count, end = 0, 0
  for record in tf.data.TFRecordDataset(path):
    end += len(record.numpy()) + 16  # length, its crc, data, data crc.
    if end > offset:
      return count
    count += 1
  return count


# Missing data_dir / no matching files.

def test_no_files_names_the_pattern_before_any_graph(tmp_path):
  params = testutil.base_config(data_dir=str(tmp_path / 'nowhere'),
                                mode='train_and_evaluate')
  with pytest.raises(ValueError, match=r'no files match .*nowhere/train-\*'):
    run_inputs.check_inputs(params)
  os.makedirs(tmp_path / 'only_train')
  shutil.copy(os.path.join(testutil.DIGITS_RAW, 'train-00000-of-00004'),
              tmp_path / 'only_train')
  params = params.replace(data_dir=str(tmp_path / 'only_train'))
  with pytest.raises(ValueError, match=r'only_train/validation-\*'):
    run_inputs.check_inputs(params)


def test_main_refuses_missing_data_dir_and_writes_nothing(tmp_path):
  model_dir = tmp_path / 'model'
  result = testutil.run_main([f'--data_dir={tmp_path}/missing',
                              f'--model_dir={model_dir}'])
  assert result.returncode != 0
  assert f'no files match {tmp_path}/missing/train-*' in result.stderr
  assert not model_dir.exists()  # Nothing built, nothing written.


# Corrupt TFRecord.

def test_scan_names_the_corrupt_file_and_offset(tmp_path):
  data_dir, path = _corrupt_copy(tmp_path)
  files = tfrecord.list_files(testutil.base_params(data_dir=data_dir), True)
  scans = corrupt_records.scan_files(files)
  bad = [s for s in scans if s.error]
  assert [s.path for s in bad] == [path]
  original = os.path.join(testutil.DIGITS_RAW, CORRUPT_FILE)
  assert bad[0].offset <= CORRUPT_AT
  assert bad[0].records == _records_before(original, CORRUPT_AT)
  assert bad[0].bytes_skipped == os.path.getsize(path) - bad[0].offset
  error = corrupt_records.corrupt_file_error(files)
  assert path in str(error) and 'corrupted record at' in str(error)


def test_training_on_a_corrupt_file_names_it(tmp_path):
  data_dir, path = _corrupt_copy(tmp_path)
  params = testutil.base_config(data_dir=data_dir,
                                model_dir=str(tmp_path / 'model'),
                                train_steps=200, shuffle_buffer=10,
                                runner=params_lib.default_runner())
  with pytest.raises(corrupt_records.CorruptRecordError) as raised:
    naming = run_inputs.naming_corrupt_files(params)
    with run_guard.guarded(params, input_errors=naming):
      runners.run(params, builtin.model_fn('mlp'), tfrecord.input_fn)
  assert path in str(raised.value)
  assert isinstance(raised.value.__cause__, tf.errors.DataLossError)
  assert path not in str(raised.value.__cause__)  # What TF alone says.


def test_counting_a_corrupt_eval_split_names_the_file(tmp_path):
  data_dir, path = _corrupt_copy(tmp_path, 'validation-00001-of-00002')
  with pytest.raises(corrupt_records.CorruptRecordError, match=path):
    tfrecord.count_records(testutil.base_params(data_dir=data_dir))


def test_skip_corrupt_records_skips_and_counts(tmp_path):
  name = 'validation-00001-of-00002'
  data_dir, _ = _corrupt_copy(tmp_path, name)
  params = testutil.base_config(data_dir=data_dir, skip_corrupt_records=True,
                                mode='evaluate')
  assert run_inputs.check_inputs(params) == {'skipped_corrupt_records': 1}
  clean = testutil.base_params(data_dir=testutil.DIGITS_RAW)
  original = os.path.join(testutil.DIGITS_RAW, name)
  in_file = sum(1 for _ in tf.data.TFRecordDataset(original))
  lost = in_file - _records_before(original, CORRUPT_AT)
  assert lost > 0
  readable = tfrecord.count_records(params.as_params())
  assert readable == tfrecord.count_records(clean) - lost
  dataset = tfrecord.input_fn(dict(params.as_params(), mode='infer',
                                   batch_size=50))
  assert sum(len(labels) for _, labels in dataset) == readable


def test_main_with_skip_corrupt_records_trains_and_reports(tmp_path):
  data_dir, path = _corrupt_copy(tmp_path)
  result = testutil.run_main([
      f'--data_dir={data_dir}', f'--model_dir={tmp_path}/model',
      '--mode=train', '--train_steps=60', '--mlp_hidden_units=8',
      '--skip_corrupt_records', '--shuffle_buffer=100'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'skipped_corrupt_records: 1' in result.stdout
  assert 'global_step: 60' in result.stdout
  assert path in result.stderr  # The log names the file skipped.


# Records of the wrong shape or dtype.

def _example(**override):
  """A good raw 28x28 example, with features replaced by `override`."""
  example = tf.train.Example.FromString(feature_lib.make_example(
      bytes(28 * 28), feature_lib.RAW, label=3, height=28, width=28,
      channels=1))
  for key, value in override.items():
    example.features.feature[key].CopyFrom(value)
  return example.SerializeToString()


@pytest.mark.parametrize('feature,value', [
    (feature_lib.LABEL, tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[b'3']))),           # dtype
    (feature_lib.LABEL, tf.train.Feature(
        int64_list=tf.train.Int64List(value=[3, 4]))),            # shape
    (feature_lib.HEIGHT, tf.train.Feature(
        float_list=tf.train.FloatList(value=[28.0]))),            # dtype
    (feature_lib.ENCODED, tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[bytes(700)]))),      # shape
    (feature_lib.CHANNELS, tf.train.Feature(
        int64_list=tf.train.Int64List(value=[3]))),               # shape
])
def test_wrong_shape_or_dtype_names_the_feature(tmp_path, feature, value):
  with tf.io.TFRecordWriter(str(tmp_path / 'validation-00000')) as writer:
    for _ in range(3):
      writer.write(_example())
    writer.write(_example(**{feature: value}))
  params = testutil.base_params(data_dir=str(tmp_path), mode='infer',
                                extra={'batch_size': 2})
  with pytest.raises(tf.errors.InvalidArgumentError) as raised:
    for _ in tfrecord.input_fn(params):
      pass
  assert feature in raised.value.message


# --init_checkpoint from another model.

def _model_fn_graph(params, mode=ModeKeys.TRAIN):
  """Builds the MLP model_fn in the current graph; returns its spec."""
  images = tf.zeros([4, 28, 28, 1])
  labels = tf.zeros([4], tf.int32)
  return builtin.model_fn('mlp')({'image': images}, labels, mode,
                                 dict(params, batch_size=4))


def test_init_checkpoint_of_another_model_lists_variables(tmp_path):
  prefix = str(tmp_path / 'other' / 'model.ckpt')
  with tf.Graph().as_default():
    _model_fn_graph(testutil.base_params(mlp_hidden_units=[16]))
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver().save(sess, prefix)
  params = testutil.base_params(mlp_hidden_units=[32, 8],
                                init_checkpoint=str(tmp_path / 'other'))
  with tf.Graph().as_default():
    with pytest.raises(warm_start.InitCheckpointError) as raised:
      _model_fn_graph(params)
  message = str(raised.value)
  assert prefix in message
  assert 'mlp/dense1/kernel: model [784, 32], checkpoint [784, 16]' in message
  assert 'mlp/dense1/bias: model [32], checkpoint [16]' in message
  assert 'missing mlp/dense2/kernel' in message
  # The same checkpoint warm-starts its own configuration.
  with tf.Graph().as_default():
    spec = _model_fn_graph(dict(params, mlp_hidden_units=[16]))
    assert spec.scaffold_fn is not None


# A model_dir written by a different model configuration.

def test_model_dir_of_another_configuration_is_refused(tmp_path):
  model_dir = str(tmp_path / 'model')
  first = testutil.base_config(model_dir=model_dir, mlp_hidden_units=[16])
  keys = builtin.fingerprint_keys('mlp')  # What main passes for --model=mlp.
  run_fingerprint.check(first, training=True, model_keys=keys)
  marker = os.path.join(model_dir, 'model.ckpt-10.index')
  open(marker, 'w').close()
  # Same config: resumes.
  run_fingerprint.check(first, training=True, model_keys=keys)
  run_fingerprint.check(first.replace(learning_rate=0.5, train_steps=999),
                        training=True,
                        model_keys=keys)  # Not part of the configuration.
  assert os.path.exists(marker)

  other = first.replace(mlp_hidden_units=[32], optimizer='sgd')
  for training in (True, False):
    with pytest.raises(run_fingerprint.ModelDirMismatchError) as raised:
      run_fingerprint.check(other, training=training, model_keys=keys)
    assert '--mlp_hidden_units: [16] there, [32] now' in str(raised.value)
    assert "--optimizer: 'adam' there, 'sgd' now" in str(raised.value)
    assert '--overwrite_model_dir' in str(raised.value)
  with pytest.raises(run_fingerprint.ModelDirMismatchError):
    run_fingerprint.check(other, training=False, overwrite=True,
                          model_keys=keys)
  assert os.path.exists(marker)  # Refusing deletes nothing.

  with model_dir_lock.locked(model_dir):
    run_fingerprint.check(other, training=True, overwrite=True,
                          model_keys=keys)
    assert not os.path.exists(marker)
    assert os.path.exists(os.path.join(model_dir, model_dir_lock.LOCK_FILE))
  # Now the stored config.
  run_fingerprint.check(other, training=True, model_keys=keys)
  with pytest.raises(run_fingerprint.ModelDirMismatchError):
    run_fingerprint.check(first, training=True, model_keys=keys)


def test_a_model_is_not_identified_by_how_model_is_spelled(tmp_path):
  model_dir = str(tmp_path / 'model')
  first = testutil.base_config(model_dir=model_dir, model='mlp')
  run_fingerprint.check(first, training=True,
                        model_keys=builtin.fingerprint_keys('mlp'))
  # The same model_fn named as a file or a module: no sizes of its own.
  for spelling in ('model_fn/models.py:mlp_model_fn',
                   'model_fn.models:mlp_model_fn'):
    run_fingerprint.check(first.replace(model=spelling), training=True)
  with pytest.raises(run_fingerprint.ModelDirMismatchError) as raised:
    run_fingerprint.check(first.replace(model=spelling, optimizer='sgd'),
                          training=True)
  message = str(raised.value)
  assert "--optimizer: 'adam' there, 'sgd' now" in message
  assert '--model:' not in message
  # A new --model_dir first; deleting the run named last, as destructive.
  assert message.index('use a new --model_dir') < message.index(
      '--overwrite_model_dir')
  assert 'last and destructive option, --overwrite_model_dir' in message
  # A record of an older trainer, with `model`, is still read.
  with open(os.path.join(model_dir, run_fingerprint.FINGERPRINT_FILE)) as f:
    record = json.load(f)
  record['model'] = 'other'
  with open(os.path.join(model_dir, run_fingerprint.FINGERPRINT_FILE),
            'w') as f:
    json.dump(record, f)
  run_fingerprint.check(first, training=True,
                        model_keys=builtin.fingerprint_keys('mlp'))


def test_checkpoints_without_a_record_get_none(tmp_path):
  """What wrote them is not known: recording this configuration could
  misname them (the restore checks they fit, trainer/guard/checkpoint_fit)."""
  model_dir = str(tmp_path / 'model')
  _save_checkpoint(model_dir)
  params = testutil.base_config(model_dir=model_dir, mlp_hidden_units=[32])
  run_fingerprint.check(params, training=True,
                        model_keys=builtin.fingerprint_keys('mlp'))
  assert not os.path.exists(os.path.join(model_dir,
                                         run_fingerprint.FINGERPRINT_FILE))


def _save_checkpoint(model_dir):
  with tf.Graph().as_default():
    tf.compat.v1.train.get_or_create_global_step()
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver().save(
          session, os.path.join(model_dir, 'model.ckpt'), global_step=0)


def test_main_refuses_model_dir_of_another_configuration(tmp_path):
  model_dir = str(tmp_path / 'model')
  common = [f'--model_dir={model_dir}', '--mode=train', '--train_steps=5']
  first = testutil.run_main(common + ['--mlp_hidden_units=8'])
  assert first.returncode == 0, first.stderr[-3000:]
  second = testutil.run_main(common + ['--mlp_hidden_units=12'])
  assert second.returncode == 1
  assert '--mlp_hidden_units: [8] there, [12] now' in second.stderr
  assert 'Traceback' not in second.stderr
  assert tf.train.latest_checkpoint(model_dir).endswith('model.ckpt-5')
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
  assert reader.get_variable_to_shape_map()['mlp/dense1/bias'] == [8]


def test_unreachable_remote_data_dir_names_the_flag_without_a_traceback():
  """An unreachable gs:// bucket (no network or no such bucket) stops the
  trainer with one line naming --data_dir and what to check."""
  result = testutil.run_main(['--data_dir=gs://tpu-trainer-no-such-bucket-0/x',
                              '--train_steps=1'])
  assert result.returncode != 0
  assert '--data_dir' in result.stderr and 'Traceback' not in result.stderr
