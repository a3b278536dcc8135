"""trainer.main's runners refuse a checkpoint that does not fit the model,
in every mode, before any step: the lane's default runner (the real
TPUEstimator on TF 2.15, the tf2 runner elsewhere), in-process, with the
built-in MLP trained at --mlp_hidden_units=16 and run again at 32 on a
model_dir without trainer_config.json (one written by a program, or by an
older trainer: the configuration check has nothing to compare, so the
restore decides). Without the check both restore the [784, 16] kernel into
the [784, 32] model and go on, exit 0.
"""

import os
import shutil

import pytest
import tensorflow as tf

from input_fn import inputs
from tests import testutil
from trainer.guard import checkpoint_fit
from trainer.models import builtin
from trainer.runners import registry as runners
from trainer.runtime import modes as controller


def _params(model_dir, mode, width):
  return testutil.base_config(
      model_dir=model_dir, mode=mode, mlp_hidden_units=[width],
      train_steps=10, iterations_per_loop=5, save_checkpoints_steps=5,
      eval_steps=1, export_dir=os.path.join(model_dir, 'export'))


def _run(params):
  runner = runners.make_runner(params, builtin.model_fn('mlp'),
                               inputs.INPUT_FNS[params.input])
  return controller.run(runner, params)


def _files(model_dir):
  return {os.path.join(os.path.relpath(root, model_dir), name):
          os.stat(os.path.join(root, name)).st_mtime_ns
          for root, _, names in os.walk(model_dir) for name in names}


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """A model_dir of the MLP at width 16 trained 5 steps."""
  model_dir = str(tmp_path_factory.mktemp('runners') / 'model')
  _run(_params(model_dir, 'train', 16).replace(train_steps=5))
  assert tf.train.latest_checkpoint(model_dir).endswith('model.ckpt-5')
  return model_dir


@pytest.mark.parametrize('mode', ['train', 'evaluate', 'predict', 'export'])
def test_a_wider_mlp_is_refused_naming_its_variables(trained, mode):
  before = _files(trained)
  with pytest.raises(checkpoint_fit.CheckpointMismatchError) as raised:
    _run(_params(trained, mode, 32))
  message = str(raised.value)
  checkpoint = os.path.join(trained, 'model.ckpt-5')
  assert message.startswith(f'checkpoint {checkpoint} does not fit the '
                            'model: ')
  assert ('  mlp/dense1/kernel: [784, 16] float32 in the checkpoint, '
          '[784, 32] float32 in the model') in message
  assert '  mlp/logits/kernel: [16, 10] float32 in the checkpoint' in message
  if mode == 'train':  # Its Adam slots, under it.
    assert 'its optimizer slots mlp/dense1/kernel/Adam, ' in message
  assert _files(trained) == before  # Nothing written.
  assert tf.train.latest_checkpoint(trained) == checkpoint


def test_the_same_mlp_resumes(trained, tmp_path):
  model_dir = str(tmp_path / 'model')
  shutil.copytree(trained, model_dir)
  assert _run(_params(model_dir, 'train', 16)) == {'global_step': 10}
