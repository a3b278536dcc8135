"""Keras layers of the native models, each knowing its TF1 variable names.

Every layer here builds the same computation as its model_fn.layers
counterpart (same ops in the same order, so float32 outputs match) and
returns `tf1_variables(scope)`: {TF1 variable name: variable}, the names the
TF1 model gives the same weights under `scope`. The checkpoint converter and
weight decay read them.

Under a `mixed_bfloat16` dtype policy variables stay float32 and are cast to
bfloat16 when used; batch norm computes its statistics in float32, as
model_fn.layers.batch_norm does.
"""

from model_fn import layers as tf1_layers
from model_fn.native.legacy_keras import keras
import tensorflow as tf

# Batch norm as model_fn.layers.batch_norm: decay 0.9, epsilon 1e-5.
BATCH_NORM_MOMENTUM = 0.9
BATCH_NORM_EPSILON = 1e-5


def he_fan_out():
  """The convolution initializer of model_fn.layers.conv2d."""
  return keras.initializers.VarianceScaling(
      scale=2.0, mode='fan_out', distribution='truncated_normal')


def dense_tf1_variables(layer, scope):
  """{scope/kernel, scope/bias: variable} of a keras Dense layer."""
  names = {f'{scope}/kernel': layer.kernel}
  if layer.bias is not None:
    names[f'{scope}/bias'] = layer.bias
  return names


class ConvBN(keras.layers.Layer):
  """conv2d (no bias) -> batch norm -> optional ReLU, as resnet._conv_bn.

  Strided convolutions pad explicitly by kernel_size - 1 (begin: half,
  rounded down) and run VALID; stride 1 runs SAME, as model_fn.layers.conv2d.
  Batch norm is Keras' unfused BatchNormalization, whose math (tf.nn.moments,
  tf.nn.batch_normalization, moving averages by assign_sub) is that of
  model_fn.layers.batch_norm; zero_gamma initialises gamma to 0.
  """

  def __init__(self, filters, kernel_size, strides, relu=True,
               zero_gamma=False, **kwargs):
    super().__init__(**kwargs)
    if strides < 1:
      raise ValueError(f'`strides` ({strides}) must be a positive integer.')
    self._relu = relu
    self._pad = None
    if strides > 1:
      total = kernel_size - 1
      self._pad = [[0, 0], [total // 2, total - total // 2],
                   [total // 2, total - total // 2], [0, 0]]
    self.conv = keras.layers.Conv2D(
        filters, kernel_size, strides=strides,
        padding='valid' if strides > 1 else 'same', use_bias=False,
        kernel_initializer=he_fan_out(), name='conv', dtype=self.dtype_policy)
    self.batch_norm = keras.layers.BatchNormalization(
        momentum=BATCH_NORM_MOMENTUM, epsilon=BATCH_NORM_EPSILON, fused=False,
        gamma_initializer='zeros' if zero_gamma else 'ones',
        name=tf1_layers.BATCH_NORM_SCOPE, dtype=self.dtype_policy)

  def call(self, inputs, training=False):
    x = inputs
    if self._pad is not None:
      x = tf.pad(x, self._pad)
    x = self.batch_norm(self.conv(x), training=training)
    return tf.nn.relu(x) if self._relu else x

  def tf1_variables(self, scope):
    bn = f'{scope}/{tf1_layers.BATCH_NORM_SCOPE}'
    return {
        f'{scope}/conv/kernel': self.conv.kernel,
        f'{bn}/gamma': self.batch_norm.gamma,
        f'{bn}/beta': self.batch_norm.beta,
        f'{bn}/moving_mean': self.batch_norm.moving_mean,
        f'{bn}/moving_variance': self.batch_norm.moving_variance,
    }
