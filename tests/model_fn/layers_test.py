"""Layers on get_variable: shapes, names, batch-norm updates, bfloat16."""

import numpy as np
import tensorflow as tf

from model_fn import layers
from tests import testutil

_v1 = tf.compat.v1


def _names(variables):
  return sorted(testutil.variable_name(v) for v in variables)


def test_dense_shape_and_variables():
  with tf.Graph().as_default():
    x = tf.zeros([4, 6])
    y = layers.dense(x, 3, name='fc')
    assert y.shape.as_list() == [4, 3]
    assert _names(_v1.trainable_variables()) == ['fc/bias', 'fc/kernel']


def test_dense_rejects_non_2d_input():
  with tf.Graph().as_default():
    try:
      layers.dense(tf.zeros([2, 3, 4]), 5, name='bad')
    except ValueError as e:
      assert "'bad'" in str(e)
    else:
      raise AssertionError('expected ValueError')


def test_conv2d_output_size_and_no_bias():
  with tf.Graph().as_default():
    x = tf.zeros([2, 9, 9, 3])
    y = layers.conv2d(x, 8, 3, 2, name='c')
    assert y.shape.as_list() == [2, 5, 5, 8]  # Explicit padding: ceil(9/2).
    assert _names(_v1.trainable_variables()) == ['c/kernel']


def test_conv2d_matches_reference_convolution():
  rng = np.random.RandomState(0)
  x_np = rng.randn(1, 6, 6, 2).astype(np.float32)
  with tf.Graph().as_default(), _v1.Session() as sess:
    y = layers.conv2d(tf.constant(x_np), 4, 3, 1, name='c')
    sess.run(_v1.global_variables_initializer())
    kernel = sess.run(_v1.global_variables()[0])
    expected = tf.nn.conv2d(x_np, kernel, 1, 'SAME')
    np.testing.assert_allclose(sess.run(y), sess.run(expected), rtol=1e-5,
                               atol=1e-5)


def test_batch_norm_training_updates_moving_averages():
  rng = np.random.RandomState(0)
  x_np = (rng.randn(64, 5) * 3.0 + 2.0).astype(np.float32)
  with tf.Graph().as_default(), _v1.Session() as sess:
    y = layers.batch_norm(tf.constant(x_np), is_training=True, decay=0.5)
    updates = _v1.get_collection(_v1.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    assert _names(_v1.trainable_variables()) == ['batch_norm/beta',
                                                 'batch_norm/gamma']
    moving = _v1.get_collection(_v1.GraphKeys.MOVING_AVERAGE_VARIABLES)
    assert _names(moving) == ['batch_norm/moving_mean',
                              'batch_norm/moving_variance']
    sess.run(_v1.global_variables_initializer())
    out, _ = sess.run([y, updates])
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-4)
    np.testing.assert_allclose(out.std(axis=0), 1.0, atol=1e-2)
    mean = sess.run(_v1.global_variables('batch_norm/moving_mean')[0])
    np.testing.assert_allclose(mean, 0.5 * x_np.mean(axis=0), rtol=1e-4)


def test_batch_norm_inference_uses_moving_averages():
  with tf.Graph().as_default(), _v1.Session() as sess:
    x = tf.fill([3, 2], 5.0)
    y = layers.batch_norm(x, is_training=False)
    assert not _v1.get_collection(_v1.GraphKeys.UPDATE_OPS)
    sess.run(_v1.global_variables_initializer())
    # Fresh averages are mean 0, variance 1: y = x / sqrt(1 + eps).
    np.testing.assert_allclose(sess.run(y), 5.0 / np.sqrt(1 + 1e-5),
                               rtol=1e-6)


def test_bfloat16_scope_keeps_float32_variables():
  with tf.Graph().as_default():
    with _v1.tpu.bfloat16_scope():
      x = tf.zeros([2, 4, 4, 3], tf.bfloat16)
      h = layers.conv2d(x, 4, 3, 1, name='conv')
      h = layers.batch_norm(h, is_training=True)
      y = layers.dense(layers.flatten(h), 2, name='fc')
    assert h.dtype == tf.bfloat16 and y.dtype == tf.bfloat16
    dtypes = {testutil.variable_name(v): v.dtype.base_dtype
              for v in _v1.global_variables()}
    assert set(dtypes.values()) == {tf.float32}, dtypes
    assert 'conv/kernel' in dtypes and 'fc/kernel' in dtypes


def test_flatten():
  with tf.Graph().as_default():
    assert layers.flatten(tf.zeros([2, 3, 4, 5])).shape.as_list() == [2, 60]
