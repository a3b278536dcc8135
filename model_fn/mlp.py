"""Multi-layer perceptron on flattened images (the seeds' 784-128-10)."""

import tensorflow as tf

from model_fn import layers
from model_fn import slicing


def mlp(images, is_training, params):
  """Returns logits [batch, num_classes] in the dtype of `images`.

  params: `mlp_hidden_units` (list of widths), `num_classes`,
  and `num_slices` / `slice`: with slice == 'dense', each odd hidden layer
  (1st, 3rd, ...) is computed in slices of its units together with the layer
  that consumes it, so its full activation never exists.
  Variables: mlp/dense1/{kernel,bias} ... mlp/logits/{kernel,bias}, the same
  sliced or not.
  """
  del is_training  # No dropout or batch norm.
  hidden_units = [int(u) for u in params['mlp_hidden_units']]
  k = slicing.num_slices(params, 'dense')
  with tf.compat.v1.variable_scope('mlp'):
    x = layers.flatten(images)
    i = 0
    while i < len(hidden_units):
      name = f'dense{i + 1}'
      if k == 1:
        x = tf.nn.relu(layers.dense(x, hidden_units[i], name=name))
        i += 1
        continue
      # Hidden layer i fused with its consumer: layer i + 1 or the logits.
      kernel1, bias1 = layers.dense_weights(x.shape[-1], hidden_units[i],
                                            name, x.dtype)
      last = i + 1 == len(hidden_units)
      out_units = params['num_classes'] if last else hidden_units[i + 1]
      out_name = 'logits' if last else f'dense{i + 2}'
      kernel2, bias2 = layers.dense_weights(hidden_units[i], out_units,
                                            out_name, x.dtype)
      x = tf.nn.bias_add(
          slicing.sliced_dense_pair(x, kernel1, bias1, kernel2, k,
                                    input_gradient=i > 0), bias2)
      if last:
        return x
      x = tf.nn.relu(x)
      i += 2
    return layers.logits(x, params['num_classes'], name='logits')
