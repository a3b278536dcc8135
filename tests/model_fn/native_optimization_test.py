"""Native optimizers: the TF1 updates, step for step, under a changing LR."""

import os

os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

# pylint: disable=g-import-not-at-top,wrong-import-position
import numpy as np
import pytest
import tensorflow as tf

from model_fn import optimization as tf1_optimization
from model_fn.native import optimization
from model_fn.native.legacy_keras import keras

STEPS = 6
# Warmup then cosine decay: the rate changes at every one of the STEPS.
PARAMS = {'learning_rate': 0.1, 'lr_schedule': 'cosine', 'warmup_steps': 2,
          'train_steps': STEPS, 'momentum': 0.9, 'use_tpu': False,
          'weight_decay': 0.0}


def _gradients():
  rng = np.random.RandomState(0)
  return [rng.normal(size=[3, 4]).astype(np.float32) for _ in range(STEPS)]


def _start():
  return np.random.RandomState(1).normal(size=[3, 4]).astype(np.float32)


def _tf1_trajectory(name):
  """Weights after each step of the tf.compat.v1 optimizer (eager)."""
  var = tf.Variable(_start())
  step = tf.Variable(0, dtype=tf.int64)
  params = dict(PARAMS, optimizer=name)
  rate = lambda: tf1_optimization.learning_rate_schedule(step, params)
  optimizer = tf1_optimization.make_optimizer(rate, params)
  out = []
  for g in _gradients():
    optimizer.apply_gradients([(tf.constant(g), var)], global_step=step)
    out.append(var.numpy())
  return np.stack(out)


def _native_trajectory(optimizer):
  var = tf.Variable(_start())
  out = []
  for g in _gradients():
    optimizer.apply_gradients([(tf.constant(g), var)])
    out.append(var.numpy())
  return np.stack(out)


@pytest.mark.parametrize('name', ['sgd', 'momentum', 'adam'])
def test_native_optimizer_makes_the_tf1_updates(name):
  expected = _tf1_trajectory(name)
  got = _native_trajectory(optimization.make_optimizer(
      dict(PARAMS, optimizer=name)))
  print(f'{name}: max |dweight| over {STEPS} steps '
        f'{np.abs(got - expected).max():.3g}')
  # float32 rounding: Adam's beta powers come from pow(), TF1's from a
  # running product, and the fused TF1 kernels round differently; bound the
  # difference by 1e-5 of the largest step (learning rate 0.1).
  np.testing.assert_allclose(got, expected, rtol=0,
                             atol=1e-5 * PARAMS['learning_rate'])


def test_keras_sgd_momentum_differs_once_the_rate_changes():
  """Why V1Momentum exists: Keras SGD folds lr into its velocity."""
  expected = _tf1_trajectory('momentum')
  keras_sgd = _native_trajectory(keras.optimizers.SGD(
      optimization.LearningRate(PARAMS), momentum=0.9))
  assert np.abs(keras_sgd[0] - expected[0]).max() == 0  # lr(0) = 0: no move.
  assert np.abs(keras_sgd - expected).max() > 1e-2


def test_learning_rate_is_the_tf1_schedule_at_iterations():
  schedule = optimization.LearningRate(PARAMS)
  for step in range(STEPS + 2):
    assert float(schedule(step)) == float(
        tf1_optimization.learning_rate_schedule(step, PARAMS))


def test_slots_by_tf1_suffix():
  var = tf.Variable(tf.zeros([2]))
  adam = optimization.make_optimizer(dict(PARAMS, optimizer='adam'))
  adam.build([var])
  assert sorted(optimization.tf1_slots(adam, var)) == ['Adam', 'Adam_1']
  momentum = optimization.make_optimizer(dict(PARAMS, optimizer='momentum'))
  momentum.build([var])
  assert list(optimization.tf1_slots(momentum, var)) == ['Momentum']
  sgd = optimization.make_optimizer(dict(PARAMS, optimizer='sgd'))
  assert not optimization.tf1_slots(sgd, var)
  with pytest.raises(ValueError, match="params\\['optimizer'\\]"):
    optimization.make_optimizer(dict(PARAMS, optimizer='rmsprop'))
