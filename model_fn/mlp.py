"""Multi-layer perceptron on flattened images (the seeds' 784-128-10)."""

import tensorflow as tf

from model_fn import layers


def mlp(images, is_training, params):
  """Returns logits [batch, num_classes] in the dtype of `images`.

  params: `mlp_hidden_units` (list of widths, default [128]), `num_classes`.
  Variables: mlp/dense1/{kernel,bias} ... mlp/logits/{kernel,bias}.
  """
  del is_training  # No dropout or batch norm.
  hidden_units = params.get('mlp_hidden_units', [128])
  with tf.compat.v1.variable_scope('mlp'):
    x = layers.flatten(images)
    for i, units in enumerate(hidden_units, start=1):
      x = tf.nn.relu(layers.dense(x, int(units), name=f'dense{i}'))
    return layers.dense(x, params['num_classes'], name='logits')
