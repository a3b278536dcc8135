"""After a save interrupted at any point, model_dir resumes from the newest
complete checkpoint and every checkpoint left in it loads."""

import glob
import os
import shutil

import numpy as np
import tensorflow as tf

from tests import testutil
from trainer.guard import checkpoint_recovery


def _save_steps(model_dir, steps, max_to_keep=5):
  """Saves model.ckpt-STEP for each step with a Saver, as training does."""
  with tf.Graph().as_default():
    weights = tf.compat.v1.get_variable('w', [50, 20])
    step_var = tf.compat.v1.train.get_or_create_global_step()
    saver = tf.compat.v1.train.Saver(sharded=True, max_to_keep=max_to_keep,
                                     save_relative_paths=True)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      for step in steps:
        sess.run([step_var.assign(step), weights.assign_add(tf.ones_like(
            weights))])
        saver.save(sess, os.path.join(model_dir, 'model.ckpt'),
                   global_step=step)


def _assert_every_checkpoint_loads(model_dir):
  indexes = glob.glob(os.path.join(model_dir, '*.index'))
  assert indexes
  for index in indexes:
    reader = tf.train.load_checkpoint(index[:-len('.index')])
    for name in reader.get_variable_to_shape_map():
      assert np.all(np.isfinite(reader.get_tensor(name)))


def test_leftovers_of_an_interrupted_save_are_removed(tmp_path):
  model_dir = str(tmp_path)
  _save_steps(model_dir, [10, 20, 30])
  # Killed while writing step 40's index in place, after its data rename:
  shutil.copy(tmp_path / 'model.ckpt-30.data-00000-of-00001',
              tmp_path / 'model.ckpt-40.data-00000-of-00001')
  index = (tmp_path / 'model.ckpt-30.index').read_bytes()
  (tmp_path / 'model.ckpt-40.index').write_bytes(index[:len(index) // 2])
  # Killed inside the _temp directory of step 50, and during a state write:
  os.makedirs(tmp_path / 'model.ckpt-50_temp')
  (tmp_path / 'model.ckpt-50_temp' / 'part-00000-of-00001.index').write_bytes(
      b'partial')
  (tmp_path / ('checkpoint.tmp' + 'ab' * 16)).write_text('partial')
  # Killed while deleting an old checkpoint: its data without its index.
  (tmp_path / 'model.ckpt-0.data-00000-of-00001').write_bytes(b'old')
  assert testutil.latest_step(model_dir) == 30

  path = checkpoint_recovery.recover(model_dir)

  assert path == os.path.join(model_dir, 'model.ckpt-30')
  assert testutil.latest_step(model_dir) == 30
  quarantine, = glob.glob(os.path.join(model_dir, 'corrupt-*'))
  assert sorted(os.listdir(model_dir)) == sorted(
      ['checkpoint', os.path.basename(quarantine)] +
      [f'model.ckpt-{s}.{ext}' for s in (10, 20, 30)
       for ext in ('index', 'data-00000-of-00001', 'meta')])
  assert sorted(os.listdir(quarantine)) == [  # Moved aside, not deleted.
      'model.ckpt-0.data-00000-of-00001', 'model.ckpt-40.data-00000-of-00001',
      'model.ckpt-40.index']
  _assert_every_checkpoint_loads(model_dir)


def test_state_naming_a_missing_checkpoint_falls_back(tmp_path):
  model_dir = str(tmp_path)
  _save_steps(model_dir, [10, 20, 30])
  for name in glob.glob(str(tmp_path / 'model.ckpt-30.*')):
    os.remove(name)
  assert tf.train.latest_checkpoint(model_dir) is None  # TF: start over!

  checkpoint_recovery.recover(model_dir)

  assert testutil.latest_step(model_dir) == 20
  state = tf.train.get_checkpoint_state(model_dir)
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
      'model.ckpt-10', 'model.ckpt-20']


def test_complete_checkpoint_missing_from_the_state_is_adopted(tmp_path):
  model_dir = str(tmp_path)
  _save_steps(model_dir, [10, 20, 30])
  state = (tmp_path / 'checkpoint').read_text()
  _save_steps(model_dir, [40])  # Killed after the save, before the state:
  (tmp_path / 'checkpoint').write_text(state)
  assert testutil.latest_step(model_dir) == 30

  checkpoint_recovery.recover(model_dir)

  assert testutil.latest_step(model_dir) == 40
  _assert_every_checkpoint_loads(model_dir)


def test_adopting_a_checkpoint_keeps_keep_checkpoint_max(tmp_path):
  model_dir = str(tmp_path)
  _save_steps(model_dir, [10, 20, 30], max_to_keep=3)
  state = (tmp_path / 'checkpoint').read_text()
  _save_steps(model_dir, [40])  # Killed after the save, before the state:
  (tmp_path / 'checkpoint').write_text(state)

  checkpoint_recovery.recover(model_dir, max_to_keep=3)

  state = tf.train.get_checkpoint_state(model_dir)
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
      'model.ckpt-20', 'model.ckpt-30', 'model.ckpt-40']
  assert not glob.glob(os.path.join(model_dir, 'model.ckpt-10.*'))
  _assert_every_checkpoint_loads(model_dir)


def test_clean_and_empty_directories_are_left_alone(tmp_path):
  assert checkpoint_recovery.recover(str(tmp_path / 'missing')) is None
  model_dir = str(tmp_path)
  _save_steps(model_dir, [10, 20])
  before = {n: os.path.getmtime(os.path.join(model_dir, n))
            for n in os.listdir(model_dir)}
  assert checkpoint_recovery.recover(model_dir).endswith('model.ckpt-20')
  assert before == {n: os.path.getmtime(os.path.join(model_dir, n))
                    for n in os.listdir(model_dir)}
