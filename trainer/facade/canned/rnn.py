"""Recurrent Estimators: tf.estimator.experimental.RNNClassifier and
RNNEstimator.

As tensorflow_estimator 2.15's: an `RNNModel` named 'rnn_model' feeds the
sequence feature columns (tf.keras.experimental.SequenceFeatures), with the
context columns tiled along each sequence, through a Keras RNN layer (LSTM,
GRU or SimpleRNN of `units`, stacked cells from a list of units, or the
cells rnn_cell_fn returns) masked by the sequence lengths, then a Dense
`logits` layer; it logs a `sequence_length` histogram. Optimizer: a Keras
legacy one whose `iterations` is global_step; a name gets learning rate
0.05 and gradients clipped to norm 5. With return_sequences the logits are
per time step and the head must be a sequential head.
"""

import tensorflow as tf

from trainer.api import specs
from trainer.compat import canned as canned_private
from trainer.facade import estimator
from trainer.facade.canned import optimizers
from trainer.facade.head import binary_class_head
from trainer.facade.head import multi_class_head
from trainer.facade.head import sequential_head

ModeKeys = specs.ModeKeys

_DEFAULT_LEARNING_RATE = 0.05
_DEFAULT_CLIP_NORM = 5.0
_SIMPLE_RNN_KEY = 'simple_rnn'
_LSTM_KEY = 'lstm'
_GRU_KEY = 'gru'
# cell_type's default: SimpleRNN cells, unless rnn_cell_fn is given.
USE_DEFAULT = object()


# Keras RNN layers and cells by cell_type name (tensorflow_estimator's
# names, which its tests patch).
_CELL_TYPE_TO_LAYER_MAPPING = {
    _LSTM_KEY: tf.keras.layers.LSTM, _GRU_KEY: tf.keras.layers.GRU,
    _SIMPLE_RNN_KEY: tf.keras.layers.SimpleRNN}
_CELL_TYPES = {_LSTM_KEY: tf.keras.layers.LSTMCell,
               _GRU_KEY: tf.keras.layers.GRUCell,
               _SIMPLE_RNN_KEY: tf.keras.layers.SimpleRNNCell}


def _single_rnn_cell(units, cell_type):
  """One RNN cell of `units`: cell_type a name or a cell class."""
  cell_type = _CELL_TYPES.get(cell_type, cell_type)
  if not callable(cell_type):
    raise ValueError(
        '`cell_type` should be a class producing a RNN cell, or a string '
        'specifying the cell type. Supported strings are: '
        f'{[_SIMPLE_RNN_KEY, _LSTM_KEY, _GRU_KEY]}.')
  cell = cell_type(units=units)
  canned_private.enable_caching_device(cell)
  if not hasattr(cell, 'call') or not hasattr(cell, 'state_size'):
    raise ValueError('RNN cell should have a `call` and `state_size` method.')
  return cell


def _make_rnn_cell_fn(units, cell_type=_SIMPLE_RNN_KEY):
  """A function returning one cell per entry of `units` (one: the cell)."""

  def rnn_cell_fn():
    cells = [_single_rnn_cell(n, cell_type) for n in units]
    return cells[0] if len(cells) == 1 else cells

  return rnn_cell_fn


class RNNModel(tf.keras.models.Model):
  """Sequence (and context) features -> RNN layer -> Dense `logits`."""

  def __init__(self, rnn_layer, units, sequence_feature_columns,
               context_feature_columns=None, activation=None,
               return_sequences=False, **kwargs):
    super().__init__(**kwargs)
    if not isinstance(units, int):
      raise ValueError(f'units must be an int.  Given type: {type(units)}')
    self._return_sequences = return_sequences
    self._sequence_feature_columns = sequence_feature_columns
    self._context_feature_columns = context_feature_columns
    self._sequence_features_layer = tf.keras.experimental.SequenceFeatures(
        sequence_feature_columns)
    self._dense_features_layer = None
    if context_feature_columns:
      self._dense_features_layer = tf.compat.v1.keras.layers.DenseFeatures(
          context_feature_columns)
    self._rnn_layer = rnn_layer
    self._logits_layer = tf.keras.layers.Dense(
        units=units, activation=activation, name='logits')

  def call(self, inputs, training=None):
    if not isinstance(inputs, dict):
      raise ValueError('inputs should be a dictionary of `Tensor`s. Given '
                       f'type: {type(inputs)}')
    with tf.compat.v1.name_scope('sequence_input_layer'):
      try:
        sequence_input, sequence_length = self._sequence_features_layer(
            inputs, training=training)
      except TypeError:
        sequence_input, sequence_length = self._sequence_features_layer(
            inputs)
      tf.compat.v1.summary.histogram('sequence_length', sequence_length)
      if self._context_feature_columns:
        try:
          context_input = self._dense_features_layer(inputs,
                                                     training=training)
        except TypeError:
          context_input = self._dense_features_layer(inputs)
        sequence_input = canned_private.concatenate_context_input(
            context_input, sequence_input=sequence_input)
    mask = tf.sequence_mask(sequence_length)
    outputs = self._rnn_layer(sequence_input, mask=mask, training=training)
    logits = self._logits_layer(outputs)
    if self._return_sequences:
      logits._keras_mask = mask  # pylint: disable=protected-access
    return logits

  def get_config(self):
    context = self._context_feature_columns
    return {
        'name': self.name,
        'rnn_layer': {'class_name': type(self._rnn_layer).__name__,
                      'config': self._rnn_layer.get_config()},
        'units': self._logits_layer.units,
        'return_sequences': self._return_sequences,
        'activation': tf.keras.activations.serialize(
            self._logits_layer.activation),
        'sequence_feature_columns': canned_private.serialize_columns(
            self._sequence_feature_columns),
        'context_feature_columns': (
            canned_private.serialize_columns(context) if context else None),
    }

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    rnn_layer = tf.keras.layers.deserialize(config.pop('rnn_layer'),
                                            custom_objects=custom_objects)
    sequence_columns = canned_private.deserialize_columns(
        config.pop('sequence_feature_columns'), custom_objects=custom_objects)
    context_columns = config.pop('context_feature_columns', None)
    if context_columns:
      context_columns = canned_private.deserialize_columns(
          context_columns, custom_objects=custom_objects)
    activation = tf.keras.activations.deserialize(
        config.pop('activation', None), custom_objects=custom_objects)
    return cls(rnn_layer=rnn_layer, sequence_feature_columns=sequence_columns,
               context_feature_columns=context_columns,
               activation=activation, **config)


def _get_rnn_estimator_spec(features, labels, mode, head, rnn_model,
                            optimizer, return_sequences):
  """The head's spec of the RNN's logits (see module docstring)."""
  if mode == ModeKeys.TRAIN:
    if isinstance(optimizer, str):
      optimizer = optimizers.get_optimizer_instance_v2(
          optimizer, learning_rate=_DEFAULT_LEARNING_RATE)
      optimizer.clipnorm = _DEFAULT_CLIP_NORM
    else:
      optimizer = optimizers.get_optimizer_instance_v2(optimizer)
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  else:
    optimizer = None
  logits = rnn_model(features, mode == ModeKeys.TRAIN)
  if return_sequences and head.input_sequence_mask_key not in features:
    features[head.input_sequence_mask_key] = logits._keras_mask  # pylint: disable=protected-access
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=optimizer,
      logits=logits, update_ops=rnn_model.updates,
      trainable_variables=rnn_model.trainable_variables)


def _verify_rnn_cell_input(rnn_cell_fn, units, cell_type):
  if rnn_cell_fn and (units or cell_type != USE_DEFAULT):
    raise ValueError('units and cell_type must not be specified when using '
                     'rnn_cell_fn')


def _make_rnn_layer(rnn_cell_fn, units, cell_type, return_sequences):
  """The Keras RNN layer of the arguments (see RNNEstimator)."""
  _verify_rnn_cell_input(rnn_cell_fn, units, cell_type)
  layers = _CELL_TYPE_TO_LAYER_MAPPING
  if cell_type in layers and isinstance(units, int):
    return layers[cell_type](units=units, return_sequences=return_sequences)
  if not rnn_cell_fn:
    if cell_type == USE_DEFAULT:
      cell_type = _SIMPLE_RNN_KEY
    rnn_cell_fn = _make_rnn_cell_fn(units, cell_type)
  return tf.keras.layers.RNN(cell=rnn_cell_fn(),
                             return_sequences=return_sequences)


class RNNEstimator(estimator.Estimator):
  """tf.estimator.experimental.RNNEstimator: an RNN with the given head.

  units: an int (one layer of cell_type: 'simple_rnn', 'lstm', 'gru') or a
  list (stacked cells); or rnn_cell_fn returning the cell(s) instead.
  """

  def __init__(self, head, sequence_feature_columns,
               context_feature_columns=None, units=None,
               cell_type=USE_DEFAULT, rnn_cell_fn=None,
               return_sequences=False, model_dir=None, optimizer='Adagrad',
               config=None):
    if return_sequences and not isinstance(
        head, sequential_head._SequentialHead):  # pylint: disable=protected-access
      raise ValueError('Provided head must be a `_SequentialHead` object '
                       'when `return_sequences` is set to True.')
    _verify_rnn_cell_input(rnn_cell_fn, units, cell_type)

    def _model_fn(features, labels, mode, config):
      del config
      rnn_layer = _make_rnn_layer(rnn_cell_fn=rnn_cell_fn, units=units,
                                  cell_type=cell_type,
                                  return_sequences=return_sequences)
      rnn_model = RNNModel(
          rnn_layer=rnn_layer, units=head.logits_dimension,
          sequence_feature_columns=sequence_feature_columns,
          context_feature_columns=context_feature_columns,
          return_sequences=return_sequences, name='rnn_model')
      return _get_rnn_estimator_spec(
          features, labels, mode, head=head, rnn_model=rnn_model,
          optimizer=optimizer, return_sequences=return_sequences)

    super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)


class RNNClassifier(RNNEstimator):
  """tf.estimator.experimental.RNNClassifier: an RNN of n_classes classes
  (per time step with return_sequences, masked by `sequence_mask`)."""

  def __init__(self, sequence_feature_columns, context_feature_columns=None,
               units=None, cell_type=USE_DEFAULT, rnn_cell_fn=None,
               return_sequences=False, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None,
               optimizer='Adagrad',
               loss_reduction=tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               sequence_mask='sequence_mask', config=None):
    if n_classes == 2:
      head = binary_class_head.BinaryClassHead(
          weight_column=weight_column, label_vocabulary=label_vocabulary,
          loss_reduction=loss_reduction)
    else:
      head = multi_class_head.MultiClassHead(
          n_classes=n_classes, weight_column=weight_column,
          label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    if return_sequences:
      tf.compat.v1.logging.info(
          'Converting head to sequential head with `SequentialHeadWrapper` '
          'to allow sequential predictions.')
      head = sequential_head.SequentialHeadWrapper(
          head, sequence_length_mask=sequence_mask,
          feature_columns=weight_column)
    super().__init__(
        head=head, sequence_feature_columns=sequence_feature_columns,
        context_feature_columns=context_feature_columns, units=units,
        cell_type=cell_type, rnn_cell_fn=rnn_cell_fn,
        return_sequences=return_sequences, model_dir=model_dir,
        optimizer=optimizer, config=config)
