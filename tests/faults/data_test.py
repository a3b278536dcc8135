"""A TFRecord file cut inside a record (TensorFlow reads it up to the cut
without a word) fails naming the file, the offset and the flag that uses
the records before the cut on purpose: in the trainer's input pipeline,
and for the TFRecordDataset files of programs run through the launcher."""

import logging
import os
import shutil

import pytest

from input_fn import corrupt_records
from input_fn import record_framing
from input_fn import tfrecord
from tests import testutil
from tests.faults import cases
from tests.faults import faultutil


def _cut_copy(fault_data, tmp_path, name='train-00001-of-00002', keep=5000):
  """A copy of the fixture data with `name` cut to `keep` bytes."""
  data_dir = str(tmp_path / 'data')
  shutil.copytree(fault_data, data_dir)
  path = os.path.join(data_dir, name)
  with open(path, 'r+b') as f:
    f.truncate(keep)
  return data_dir, path


def test_the_walk_finds_the_cut_and_nothing_else(fault_data, tmp_path):
  data_dir, path = _cut_copy(fault_data, tmp_path)
  cut = record_framing.find_cut(path)
  assert (cut.offset, cut.size, cut.records) == (4765, 5000, 5)
  assert record_framing.find_cut(
      os.path.join(data_dir, 'train-00000-of-00002')) is None
  corrupt = os.path.join(data_dir, 'validation-00000-of-00001')
  with open(corrupt, 'r+b') as f:  # A damaged length field: corrupt, which
    f.seek(2)                        # TF's reader names itself, not a cut.
    f.write(b'\xff')
  assert record_framing.find_cut(corrupt) is None


def test_the_input_pipeline_refuses_a_cut_file(fault_data, tmp_path, caplog):
  data_dir, path = _cut_copy(fault_data, tmp_path)
  params = testutil.base_params(data_dir=data_dir, train_batch_size=16,
                                extra={'batch_size': 16})
  with pytest.raises(corrupt_records.TruncatedRecordError) as raised:
    tfrecord.input_fn(params)
  message = str(raised.value)
  assert f'{path} is cut short: the record at byte 4765' in message
  assert '--skip_corrupt_records' in message
  with caplog.at_level(logging.WARNING):
    tfrecord.input_fn(dict(params, skip_corrupt_records=True))
  assert f'{path} is cut short' in caplog.text


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_cut_training_file_fails_before_training(path_name, fault_data,
                                                   tmp_path):
  path = faultutil.PATHS[path_name]
  data_dir, cut = _cut_copy(fault_data, tmp_path)
  model_dir = str(tmp_path / 'model')
  result, seconds = faultutil.run(path.command(model_dir, data_dir))
  assert result.returncode == cases.exit_status('truncated-tfrecord'), (
      result.stderr[-3000:])
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(
          path.name, 'truncated-tfrecord', FILE=cut, OFFSET=4765,
          TO_THE_LAUNCHER=(' to the launcher (before the program)'
                           if path.name == 'launcher' else '')))
  assert 'Traceback' not in result.stderr
  assert faultutil.latest_step(model_dir) == 0  # Nothing trained on it.
  faultutil.Record(path.name).add('a TFRecord shard cut in half',
                                  result.returncode, seconds, line, True)
