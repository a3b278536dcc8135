"""The same program restarted with a changed model (issue 39): a canned
DNNClassifier trained with hidden_units [16, 8], then built with [32, 8] on
the same model_dir, is refused in train, evaluate, predict and export
before anything is restored, naming every variable that differs, and the
model_dir keeps its checkpoint as it was; the same model resumes.

In-process, on each lane's Estimator: the facade (TF >= 2.16), whose graph
engine checks at its own restores, and the real one (TF 2.15), checked at
its Saver's restores as `python -m trainer.legacy` installs it
(checkpoint_fit.install_restore_check; here the scoped checking_restores).
Without the check both restore the [6, 16] kernel into the [6, 32] model
and train on, exit 0.
"""

import contextlib
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.api import errors
from trainer.guard import checkpoint_fit

_ROWS = np.random.RandomState(0).rand(32, 6).astype(np.float32)
_LABELS = (_ROWS[:, 0] > 0.5).astype(np.int64)
_COLUMNS = [tf.feature_column.numeric_column('x', shape=[6])]


def _train_input_fn():
  return tf.data.Dataset.from_tensor_slices(
      ({'x': _ROWS}, _LABELS)).batch(8).repeat()


def _predict_input_fn():
  return tf.data.Dataset.from_tensor_slices({'x': _ROWS}).batch(8)


def _estimator(model_dir, hidden_units):
  return tf.estimator.DNNClassifier(hidden_units=hidden_units,
                                    feature_columns=_COLUMNS,
                                    model_dir=model_dir)


def _files(model_dir):
  """{relative path: (size, mtime)} of everything under model_dir."""
  found = {}
  for root, _, names in os.walk(model_dir):
    for name in names:
      path = os.path.join(root, name)
      stat = os.stat(path)
      found[os.path.relpath(path, model_dir)] = (stat.st_size,
                                                 stat.st_mtime_ns)
  return found


def _checked():
  """What trainer.legacy adds on the real Estimator; the facade checks at
  its own restores."""
  if testutil.HAS_ESTIMATOR:
    return checkpoint_fit.checking_restores()
  return contextlib.nullcontext()


_CALLS = {
    'train': lambda est, tmp: est.train(_train_input_fn, steps=2),
    'evaluate': lambda est, tmp: est.evaluate(_train_input_fn, steps=1),
    'predict': lambda est, tmp: next(est.predict(_predict_input_fn)),
    'export': lambda est, tmp: est.export_saved_model(
        str(tmp / 'export'),
        tf.estimator.export.build_parsing_serving_input_receiver_fn(
            tf.feature_column.make_parse_example_spec(_COLUMNS))),
}


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
  """A model_dir of the [16, 8] model trained 3 steps."""
  model_dir = str(tmp_path_factory.mktemp('changed') / 'model')
  _estimator(model_dir, [16, 8]).train(_train_input_fn, steps=3)
  assert tf.train.latest_checkpoint(model_dir).endswith('model.ckpt-3')
  return model_dir


@pytest.mark.parametrize('call', list(_CALLS))
def test_a_changed_model_is_refused_before_anything_is_restored(
    trained, tmp_path, call):
  before = _files(trained)
  with _checked(), pytest.raises(checkpoint_fit.CheckpointMismatchError) as (
      raised):
    _CALLS[call](_estimator(trained, [32, 8]), tmp_path)
  error = raised.value
  assert isinstance(error, errors.TrainerError)  # One line at the launcher.
  checkpoint = os.path.join(trained, 'model.ckpt-3')
  lines = str(error).splitlines()
  assert lines[0].startswith(f'checkpoint {checkpoint} does not fit the '
                             'model: ')
  assert 'Nothing was restored. To train this model, use a new model_dir' in (
      lines[0])
  assert ('  dnn/hiddenlayer_0/kernel: [6, 16] float32 in the checkpoint, '
          '[6, 32] float32 in the model') in '\n'.join(lines)
  assert ('  dnn/hiddenlayer_1/kernel: [16, 8] float32 in the checkpoint, '
          '[32, 8] float32 in the model') in '\n'.join(lines)
  assert '  dnn/hiddenlayer_0/bias: [16] float32' in '\n'.join(lines)
  assert 'logits' not in str(error)  # [8, 2] either way.
  after = _files(trained)
  # Nothing in model_dir changed; the real Estimator's summary hooks open
  # an events file of the graph before its session restores.
  assert {k: v for k, v in after.items() if k in before} == before
  new = set(after) - set(before)
  if testutil.HAS_ESTIMATOR:
    assert all(n.startswith('events.out.tfevents.') for n in new), new
  else:
    assert not new
    assert not os.path.exists(tmp_path / 'export')
  assert tf.train.latest_checkpoint(trained) == checkpoint
  reader = tf.train.load_checkpoint(checkpoint)
  assert reader.get_tensor('dnn/hiddenlayer_0/kernel').shape == (6, 16)


def test_the_same_model_resumes(trained, tmp_path):
  model_dir = str(tmp_path / 'model')
  shutil.copytree(trained, model_dir)
  with _checked():
    estimator = _estimator(model_dir, [16, 8])
    estimator.train(_train_input_fn, steps=2)
    assert estimator.evaluate(_train_input_fn, steps=1)['global_step'] == 5
