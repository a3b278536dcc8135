"""A changed model on a model_dir of another (issue 39): the same program
restarted with a hidden layer 16 -> 32 wide is refused before any step,
with the first line naming the checkpoint and the variable and the fix,
exit 1, and the checkpoint stays as it was (before: exit 0, the [784, 16]
kernel restored into the [784, 32] model, training on with the old shapes).

trainer.main identifies a model by what it builds: the built-in MLP named
--model=mlp or model_fn/models.py:mlp_model_fn resumes (before: "a
different model configuration", with the advice to delete the run), another
--mlp_hidden_units is refused naming the flag, and a setting the record
does not hold (the model named as a module, which records none of its own)
is refused at the restore, naming the variables.
"""

import os

import pytest
import tensorflow as tf

from tests import testutil
from tests.faults import cases
from tests.faults import faultutil


def _checkpoint_files(model_dir):
  """{name: mtime} of model_dir's checkpoints and state (not events)."""
  return {name: os.stat(os.path.join(model_dir, name)).st_mtime_ns
          for name in os.listdir(model_dir)
          if name.startswith(('model.ckpt', 'checkpoint', 'trainer_config'))}


def _assert_untouched(model_dir, before, checkpoint, kernel, events_allowed):
  after = set(os.listdir(model_dir))
  assert _checkpoint_files(model_dir) == before[0]
  new = after - before[1]
  if events_allowed:  # Estimator's summary hooks open one before restoring.
    assert all(n.startswith('events.out.tfevents.') for n in new), new
  else:
    assert not new, new
  assert tf.train.latest_checkpoint(model_dir) == checkpoint
  faultutil.assert_every_checkpoint_loads(model_dir)
  assert tf.train.load_checkpoint(checkpoint).get_tensor(
      kernel).shape == (784, 16)


def _snapshot(model_dir):
  return _checkpoint_files(model_dir), set(os.listdir(model_dir))


def _refused(result, seconds, path_name, key, record, **values):
  assert result.returncode == cases.exit_status(key), result.stderr[-3000:]
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(path_name, key, **values))
  assert 'Traceback' not in result.stderr
  faultutil.Record(path_name).add(record, result.returncode, seconds, line,
                                  True)
  return result.stderr


def _launcher_chain(fault_data, model_dir):
  common = [f'--model_dir={model_dir}', f'--data_dir={fault_data}',
            '--mode=loop', '--save_steps=10', '--steps_per_eval=10']
  first, _ = faultutil.run(faultutil.launcher_command(
      common + ['--train_steps=10']))
  assert first.returncode == 0, first.stderr[-3000:]
  checkpoint = os.path.join(model_dir, 'model.ckpt-10')
  assert tf.train.latest_checkpoint(model_dir) == checkpoint
  before = _snapshot(model_dir)
  result, seconds = faultutil.run(faultutil.launcher_command(
      common + ['--train_steps=20', '--hidden_units=32']))
  stderr = _refused(result, seconds, 'launcher', 'changed-model',
                    'the same program restarted with a changed model',
                    CKPT=checkpoint)
  assert ('  mlp/hidden/kernel: [784, 16] float32 in the checkpoint, '
          '[784, 32] float32 in the model (and its optimizer slot '
          'mlp/hidden/kernel/Momentum)') in stderr
  assert '  mlp/logits/kernel: [16, 10] float32 in the checkpoint' in stderr
  _assert_untouched(model_dir, before, checkpoint, 'mlp/hidden/kernel',
                    events_allowed=testutil.HAS_ESTIMATOR)


def _main_chain(fault_data, model_dir):
  common = ['--verbosity=0', f'--model_dir={model_dir}',
            f'--data_dir={fault_data}', '--mode=train',
            f'--train_batch_size={faultutil.BATCH}', '--augmentation=none',
            '--iterations_per_loop=5', '--save_checkpoints_steps=5']
  first, _ = faultutil.run(faultutil.main_command(
      common + ['--model=mlp', '--mlp_hidden_units=16', '--train_steps=5']))
  assert first.returncode == 0, first.stderr[-3000:]
  # The same model named as a file: it resumes.
  again, _ = faultutil.run(faultutil.main_command(
      common + ['--model=model_fn/models.py:mlp_model_fn',
                '--mlp_hidden_units=16', '--train_steps=10']))
  assert again.returncode == 0, again.stderr[-3000:]
  assert 'global_step: 10' in again.stdout
  checkpoint = os.path.join(model_dir, 'model.ckpt-10')
  assert tf.train.latest_checkpoint(model_dir) == checkpoint
  before = _snapshot(model_dir)
  # Another width: the record names the flag.
  result, seconds = faultutil.run(faultutil.main_command(
      common + ['--model=mlp', '--mlp_hidden_units=32', '--train_steps=15']))
  _refused(result, seconds, 'main', 'changed-config',
           'trainer.main restarted with another model setting',
           MODEL_DIR=model_dir, DIFFS='--mlp_hidden_units: [16] there, [32] '
           'now')
  _assert_untouched(model_dir, before, checkpoint, 'mlp/dense1/kernel',
                    events_allowed=False)
  # The model named as a module records no sizes: the restore decides.
  result, seconds = faultutil.run(faultutil.main_command(
      common + ['--model=model_fn.models:mlp_model_fn',
                '--mlp_hidden_units=32', '--train_steps=15']))
  stderr = _refused(result, seconds, 'main', 'changed-model',
                    'the same program restarted with a changed model',
                    CKPT=checkpoint)
  assert ('  mlp/dense1/kernel: [784, 16] float32 in the checkpoint, '
          '[784, 32] float32 in the model (and its optimizer slots '
          'mlp/dense1/kernel/Adam, mlp/dense1/kernel/Adam_1)') in stderr
  _assert_untouched(model_dir, before, checkpoint, 'mlp/dense1/kernel',
                    events_allowed=False)


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_changed_model_is_refused_before_any_step(path_name, fault_data,
                                                     tmp_path):
  model_dir = str(tmp_path / 'model')
  if path_name == 'launcher':
    _launcher_chain(fault_data, model_dir)
  else:
    _main_chain(fault_data, model_dir)
