"""Layers built on tf.compat.v1.variable_scope / get_variable only (no Keras).

Every layer asks `get_variable` for weights in the dtype of its input. Under
`tf.compat.v1.tpu.bfloat16_scope` that stores a float32 master variable and
hands back a bfloat16 cast; outside it the variable is float32 as usual. The
same code therefore runs in float32 and bfloat16 on every TF version.

Batch norm keeps its statistics and moving averages in float32 and puts the
moving-average updates in the UPDATE_OPS collection, as tf.layers did.
"""

import contextlib
import contextvars

import tensorflow as tf

BATCH_NORM_SCOPE = 'batch_norm'

_v1 = tf.compat.v1


def variable_name(variable):
  """The TF1 / checkpoint name of a variable (or of its `name`): no ':0'."""
  name = variable if isinstance(variable, str) else variable.name
  return name.split(':')[0]


def _variance_scaling(scale, mode):
  return _v1.variance_scaling_initializer(
      scale=scale, mode=mode, distribution='truncated_normal')


def dense_weights(in_units, units, name, dtype, use_bias=True,
                  kernel_initializer=None):
  """(kernel [in_units, units], bias [units] or None) of dense layer `name`."""
  if kernel_initializer is None:
    kernel_initializer = _v1.glorot_uniform_initializer()
  with _v1.variable_scope(name):
    kernel = _v1.get_variable('kernel', [in_units, units], dtype=dtype,
                              initializer=kernel_initializer)
    bias = None
    if use_bias:
      bias = _v1.get_variable('bias', [units], dtype=dtype,
                              initializer=_v1.zeros_initializer())
  return kernel, bias


def dense(inputs, units, name, use_bias=True, kernel_initializer=None):
  """Returns `inputs @ kernel + bias` for 2-D `inputs`; variables under `name`."""
  if inputs.shape.rank != 2:
    raise ValueError(f'dense layer {name!r} expects a 2-D input, got shape '
                     f'{inputs.shape}.')
  kernel, bias = dense_weights(inputs.shape[-1], units, name, inputs.dtype,
                               use_bias, kernel_initializer)
  outputs = tf.matmul(inputs, kernel)
  if bias is not None:
    outputs = tf.nn.bias_add(outputs, bias)
  return outputs


# The logits layers built while `recording_logits_inputs()` is active.
_logits_records = contextvars.ContextVar('logits_records', default=None)


@contextlib.contextmanager
def recording_logits_inputs():
  """Yields a list that receives (features, kernel, bias) of each `logits` call.

  Lets the classifier compute the loss from the head's inputs (sliced
  cross-entropy) without changing what networks return. Scoped to this
  context (and thread); nesting is an error.
  """
  if _logits_records.get() is not None:
    raise RuntimeError('recording_logits_inputs() is already active.')
  records = []
  token = _logits_records.set(records)
  try:
    yield records
  finally:
    _logits_records.reset(token)


def logits(inputs, num_classes, name='logits', kernel_initializer=None):
  """A network's final dense layer: `dense(inputs, num_classes, name)`.

  Also hands (inputs, kernel, bias) to an active `recording_logits_inputs()`.
  """
  if inputs.shape.rank != 2:
    raise ValueError(f'logits layer {name!r} expects a 2-D input, got shape '
                     f'{inputs.shape}.')
  kernel, bias = dense_weights(inputs.shape[-1], num_classes, name,
                               inputs.dtype, True, kernel_initializer)
  records = _logits_records.get()
  if records is not None:
    records.append((inputs, kernel, bias))
  return tf.nn.bias_add(tf.matmul(inputs, kernel), bias)


def conv2d(inputs, filters, kernel_size, strides, name):
  """NHWC convolution without bias, He (fan_out) initialised.

  Strided convolutions pad explicitly by the kernel size (as ResNet v1.5
  does), so the output size does not depend on the input size's parity.
  """
  in_channels = inputs.shape[-1]
  padding = 'SAME'
  if strides > 1:
    pad_total = kernel_size - 1
    pad_beg = pad_total // 2
    inputs = tf.pad(inputs, [[0, 0], [pad_beg, pad_total - pad_beg],
                             [pad_beg, pad_total - pad_beg], [0, 0]])
    padding = 'VALID'
  with _v1.variable_scope(name):
    kernel = _v1.get_variable(
        'kernel', [kernel_size, kernel_size, in_channels, filters],
        dtype=inputs.dtype, initializer=_variance_scaling(2.0, 'fan_out'))
    return tf.nn.conv2d(inputs, kernel, strides=[1, strides, strides, 1],
                        padding=padding)


def batch_norm(inputs, is_training, name=BATCH_NORM_SCOPE, decay=0.9,
               epsilon=1e-5, zero_gamma=False):
  """Batch norm over all but the last axis; statistics in float32.

  In training the batch moments normalise and the moving averages are updated
  through ops added to UPDATE_OPS; otherwise the moving averages normalise.
  """
  channels = inputs.shape[-1]
  axes = list(range(inputs.shape.rank - 1))
  with _v1.variable_scope(name):
    gamma = _v1.get_variable(
        'gamma', [channels], dtype=tf.float32,
        initializer=(_v1.zeros_initializer() if zero_gamma
                     else _v1.ones_initializer()))
    beta = _v1.get_variable('beta', [channels], dtype=tf.float32,
                            initializer=_v1.zeros_initializer())
    moving_mean = _v1.get_variable(
        'moving_mean', [channels], dtype=tf.float32,
        initializer=_v1.zeros_initializer(), trainable=False,
        collections=[_v1.GraphKeys.GLOBAL_VARIABLES,
                     _v1.GraphKeys.MOVING_AVERAGE_VARIABLES])
    moving_variance = _v1.get_variable(
        'moving_variance', [channels], dtype=tf.float32,
        initializer=_v1.ones_initializer(), trainable=False,
        collections=[_v1.GraphKeys.GLOBAL_VARIABLES,
                     _v1.GraphKeys.MOVING_AVERAGE_VARIABLES])
    x = tf.cast(inputs, tf.float32)
    if is_training:
      mean, variance = tf.nn.moments(x, axes)
      for var, value in ((moving_mean, mean), (moving_variance, variance)):
        update = var.assign_sub((var - value) * (1.0 - decay))
        _v1.add_to_collection(_v1.GraphKeys.UPDATE_OPS, update)
    else:
      mean, variance = moving_mean, moving_variance
    outputs = tf.nn.batch_normalization(x, mean, variance, beta, gamma,
                                        epsilon)
    return tf.cast(outputs, inputs.dtype)


def max_pool(inputs, pool_size, strides, padding='SAME'):
  """NHWC max pooling."""
  return tf.nn.max_pool2d(inputs, pool_size, strides, padding)


def global_avg_pool(inputs):
  """Mean over height and width: [N, H, W, C] -> [N, C]."""
  return tf.reduce_mean(inputs, axis=[1, 2])


def flatten(inputs):
  """[N, ...] -> [N, prod(...)] with a static feature size."""
  features = 1
  for d in inputs.shape[1:]:
    features *= d
  return tf.reshape(inputs, [-1, features])
