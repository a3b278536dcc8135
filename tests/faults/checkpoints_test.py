"""Checkpoints you can always restart from: a checkpoint cut short is
moved aside (never deleted), named in one warning line, and training
resumes from the newest complete one."""

import glob
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from tests.faults import faultutil
from trainer.guard import checkpoint_files
from trainer.guard import checkpoint_recovery


def _data(model_dir, step):
  return os.path.join(model_dir, f'model.ckpt-{step}.data-00000-of-00001')


def _truncate(path, keep):
  with open(path, 'r+b') as f:
    f.truncate(keep)


def _all_files(root):
  return sorted(os.path.basename(p) for p in glob.glob(
      os.path.join(root, '**', '*'), recursive=True) if os.path.isfile(p))


@pytest.mark.parametrize('cut', [1, 0.5, 'all'])
def test_a_data_file_cut_short_is_not_complete(tmp_path, cut):
  model_dir = str(tmp_path)
  faultutil.save_checkpoints(model_dir, [10])
  prefix = os.path.join(model_dir, 'model.ckpt-10')
  assert checkpoint_files.problem(prefix) is None
  size = os.path.getsize(_data(model_dir, 10))
  keep = {1: size - 1, 0.5: size // 2, 'all': 0}[cut]
  _truncate(_data(model_dir, 10), keep)
  tf.train.load_checkpoint(prefix)  # TensorFlow opens it without a word.
  assert f'has {keep} of the {size} bytes' in checkpoint_files.problem(prefix)


def test_an_index_cut_short_is_not_complete(tmp_path):
  model_dir = str(tmp_path)
  faultutil.save_checkpoints(model_dir, [10])
  index = os.path.join(model_dir, 'model.ckpt-10.index')
  _truncate(index, os.path.getsize(index) - 3)
  assert 'unreadable .index' in checkpoint_files.problem(index[:-6])


def test_a_truncated_newest_checkpoint_is_moved_aside(tmp_path, caplog):
  model_dir = str(tmp_path)
  faultutil.save_checkpoints(model_dir, [10, 20, 30])
  _truncate(_data(model_dir, 30), 1000)
  files_before = _all_files(model_dir)
  with pytest.raises((tf.errors.OpError, IndexError),
                     match='Read less bytes'):
    tf.train.load_checkpoint(os.path.join(model_dir, 'model.ckpt-30')
                            ).get_tensor('w')

  with caplog.at_level(logging.WARNING):
    path = checkpoint_recovery.recover(model_dir)

  assert path == os.path.join(model_dir, 'model.ckpt-20')
  assert testutil.latest_step(model_dir) == 20
  quarantine = glob.glob(os.path.join(model_dir, 'corrupt-*'))
  assert len(quarantine) == 1
  assert sorted(os.listdir(quarantine[0])) == [
      'model.ckpt-30.data-00000-of-00001', 'model.ckpt-30.index',
      'model.ckpt-30.meta']
  assert _all_files(model_dir) == files_before  # Moved, not deleted.
  warnings = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING]
  assert len(warnings) == 1, warnings
  assert 'model.ckpt-30' in warnings[0] and quarantine[0] in warnings[0]
  assert 'cut short' in warnings[0] and 'model.ckpt-20' in warnings[0]
  faultutil.assert_every_checkpoint_loads(model_dir)


def test_state_naming_a_missing_checkpoint_is_one_warning(tmp_path, caplog):
  model_dir = str(tmp_path)
  faultutil.save_checkpoints(model_dir, [10, 20, 30])
  for name in glob.glob(str(tmp_path / 'model.ckpt-30.*')):
    os.remove(name)
  with caplog.at_level(logging.WARNING):
    checkpoint_recovery.recover(model_dir)
  warnings = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING]
  assert len(warnings) == 1, warnings
  assert 'model.ckpt-30' in warnings[0] and 'model.ckpt-20' in warnings[0]
  assert testutil.latest_step(model_dir) == 20


def test_no_complete_checkpoint_left_starts_over_keeping_the_files(
    tmp_path, caplog):
  model_dir = str(tmp_path)
  faultutil.save_checkpoints(model_dir, [10])
  _truncate(_data(model_dir, 10), 10)
  files_before = _all_files(model_dir)
  with caplog.at_level(logging.WARNING):
    assert checkpoint_recovery.recover(model_dir) is None
  assert tf.train.latest_checkpoint(model_dir) is None
  assert _all_files(model_dir) == files_before
  assert 'step 0' in caplog.text
