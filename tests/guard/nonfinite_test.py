"""A NaN/Inf loss stops training naming the step; no bad checkpoint is saved."""

import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from input_fn import tfrecord
from model_fn.spec import ModeKeys
from model_fn.spec import TPUEstimatorSpec
from tests import testutil
from trainer.guard import nonfinite
from trainer.runners import registry as runners
from trainer.runtime import modes


def _nan_from_step_model_fn(features, labels, mode, params):
  """A linear classifier whose loss turns NaN at step params['nan_step'].

  Steps are counted like global_step after them: the loss of the step that
  takes global_step from nan_step - 1 to nan_step is NaN.
  """
  del mode
  images = tf.reshape(features['image'], [params['batch_size'], -1])
  kernel = tf.compat.v1.get_variable('linear/kernel', [images.shape[-1], 10])
  logits = tf.matmul(images, kernel)
  loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))
  global_step = tf.compat.v1.train.get_or_create_global_step()
  loss *= tf.where(global_step >= params['nan_step'] - 1, np.nan, 1.0)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
      loss, global_step=global_step)
  return TPUEstimatorSpec(mode=ModeKeys.TRAIN, loss=loss, train_op=train_op)


RUNNERS = [pytest.param('estimator', marks=testutil.requires_estimator),
           'tf2']


@pytest.mark.parametrize('runner', RUNNERS)
@pytest.mark.parametrize('nan_step', [25, 30])  # Between saves; a save step.
def test_nan_loss_stops_at_its_step_and_keeps_last_good_checkpoint(
    tmp_path, runner, nan_step):
  model_dir = str(tmp_path)
  params = testutil.base_config(model_dir=model_dir, train_steps=60,
                                save_checkpoints_steps=10, runner=runner)

  def model_fn(features, labels, mode, params):  # params['nan_step'] too.
    return _nan_from_step_model_fn(features, labels, mode,
                                   dict(params, nan_step=nan_step))

  # The estimator runner sees the NaN weights first when saving at step 30.
  expected = rf'(Loss is nan|Variables became NaN or Inf) at step {nan_step}\b'
  with pytest.raises(nonfinite.NonFiniteLossError, match=expected) as raised:
    modes.run(runners.make_runner(params, model_fn, tfrecord.input_fn),
              params)
  latest = tf.train.latest_checkpoint(model_dir)
  assert latest.endswith('model.ckpt-20')
  assert latest in str(raised.value)
  for index in glob.glob(os.path.join(model_dir, '*.index')):
    reader = tf.train.load_checkpoint(index[:-len('.index')])
    assert reader.get_tensor('global_step') < nan_step
    assert np.isfinite(reader.get_tensor('linear/kernel')).all()


def test_check_loss_and_variables():
  nonfinite.check_loss(np.float32(1.5), 3, '/nonexistent')
  with pytest.raises(nonfinite.NonFiniteLossError,
                     match=r'Loss is inf at step 7: .* no checkpoint'):
    nonfinite.check_loss(np.float32('inf'), 7, '/nonexistent')
  nonfinite.check_variables({'a': True}, 3, '/nonexistent')
  with pytest.raises(nonfinite.NonFiniteLossError, match=r'step 9 \(b, c\)'):
    nonfinite.check_variables({'a': True, 'c': False, 'b': False}, 9,
                              '/nonexistent')


def test_check_losses_names_the_first_bad_step():
  nonfinite.check_losses([1.0, 2.0], 10, '/nonexistent')
  with pytest.raises(nonfinite.NonFiniteLossError, match=r'nan at step 9:'):
    nonfinite.check_losses([1.0, np.nan, np.inf], 10, '/x')  # Steps 8-10.
  nonfinite.check_arrays({'step': np.int64(3), 'w': np.ones(3)}, 3, '/x')
  with pytest.raises(nonfinite.NonFiniteLossError, match=r'\(w\)'):
    nonfinite.check_arrays({'w': np.array([1.0, np.inf])}, 3, '/x')
