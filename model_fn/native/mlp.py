"""The TF2-native MLP: model_fn.mlp as a Keras model with object-based weights.

Same architecture and initializers (Glorot-uniform kernels, zero biases):
flatten, hidden ReLU layers dense1..denseN, then the logits layer. Logits are
float32 whatever the dtype policy. Slicing (--slice=dense) is not offered.
"""

from model_fn.native import layers
from model_fn.native.legacy_keras import keras
import tensorflow as tf


class MLP(keras.Model):
  """784-...-num_classes perceptron; `tf1_variables()` names its weights."""

  def __init__(self, hidden_units, num_classes, dtype=None, name='mlp'):
    super().__init__(name=name, dtype=dtype)
    hidden_units = [int(u) for u in hidden_units]
    if not hidden_units or min(hidden_units) < 1:
      raise ValueError(f'`hidden_units` ({hidden_units}) must name at least '
                       'one layer, each of positive width.')
    if num_classes < 1:
      raise ValueError(f'`num_classes` ({num_classes}) must be positive.')
    self.flatten = keras.layers.Flatten(dtype=self.dtype_policy)
    self._hidden_names = [f'dense{i + 1}' for i in range(len(hidden_units))]
    for name_, units in zip(self._hidden_names, hidden_units):
      setattr(self, name_, keras.layers.Dense(
          units, activation='relu', kernel_initializer='glorot_uniform',
          name=name_, dtype=self.dtype_policy))
    self.logits = keras.layers.Dense(
        num_classes, kernel_initializer='glorot_uniform', name='logits',
        dtype=self.dtype_policy)

  def call(self, images, training=False):
    del training  # No dropout or batch norm.
    x = self.flatten(images)
    for name_ in self._hidden_names:
      x = getattr(self, name_)(x)
    return tf.cast(self.logits(x), tf.float32)

  def tf1_variables(self):
    """{TF1 name (mlp/dense1/kernel, ...): variable}, in layer order."""
    names = {}
    for name_ in self._hidden_names + ['logits']:
      names.update(layers.dense_tf1_variables(getattr(self, name_),
                                              f'mlp/{name_}'))
    return names
