"""Heads of sequence models (RNNEstimator): a static head applied to every
unmasked step of a sequence."""

import abc
import collections.abc

import tensorflow as tf

from trainer.api import specs
from trainer.facade.head import base_head
from trainer.facade.head import multi_head

ModeKeys = specs.ModeKeys


class _SequentialHead(base_head.Head):
  """A head of a sequence model: the features hold a sequence mask
  [batch_size, seq_length] under input_sequence_mask_key."""

  @property
  @abc.abstractmethod
  def input_sequence_mask_key(self):
    """The features key of the sequence mask."""


def _flatten_tensor(tensor, sequence_mask, expected_length):
  """[batch, seq, D...] -> [steps, D...] of the unmasked steps (a dense
  tensor through the mask, a SparseTensor's values in index order); a rank-2
  input gains a last dimension of 1. The step count must be
  expected_length (ValueError eagerly, InvalidArgumentError in a graph)."""
  shape = tensor.get_shape()
  if shape.ndims < 2:
    raise ValueError('Input tensor expected to have at least 2 dimensions, '
                     f'got {shape.ndims} instead.')
  if isinstance(tensor, tf.sparse.SparseTensor):
    flat = tf.sparse.reorder(tensor).values
    if shape.ndims > 2:
      flat = tf.reshape(tensor.values,
                        tf.concat([[-1], shape[2:]], axis=0))
  elif isinstance(tensor, tf.Tensor):
    flat = tf.boolean_mask(tensor, sequence_mask)
  else:
    raise ValueError('`tensor` expected to be a `Tensor` or  `SparseTensor` '
                     f'got `{tensor}` instead.')
  if shape.ndims == 2:
    flat = tf.expand_dims(flat, -1)
    expected_shape = tf.concat([[expected_length], [1]], axis=0)
  else:
    expected_shape = tf.concat([[expected_length], shape[2:]], axis=0)
  message = 'Tensor shape is incompatible with provided mask.'
  if tf.executing_eagerly():
    if tuple(flat.shape.as_list()) != tuple(expected_shape.numpy()):
      raise ValueError(message)
    return flat
  check = tf.compat.v1.debugging.assert_equal(
      tf.compat.v1.shape(flat), expected_shape, message=message)
  with tf.control_dependencies([check]):
    return tf.identity(flat)


class SequentialHeadWrapper(_SequentialHead):
  """Wraps a static head for sequences: loss, metrics and TRAIN/EVAL specs
  see only the steps the mask (features[sequence_length_mask]) keeps,
  flattened to one batch (with the features named in feature_columns, e.g.
  weights); PREDICT predicts every step and adds the mask to the
  predictions."""

  def __init__(self, static_head, sequence_length_mask='sequence_length_mask',
               feature_columns=None):
    if not isinstance(sequence_length_mask, str):
      raise TypeError('`sequence_mask` column must be a string. Given type: '
                      f'{type(sequence_length_mask)}.')
    feature_columns = feature_columns or []
    if not isinstance(feature_columns, collections.abc.Iterable):
      raise TypeError('`feature_columns` must be either a string or an '
                      'iterable of strings got '
                      f'{type(feature_columns)} instead.')
    if isinstance(feature_columns, str):
      feature_columns = [feature_columns]
    for column in feature_columns:
      if not isinstance(column, str):
        raise TypeError(f'Column must a string. Given type: {type(column)}.')
    if isinstance(static_head, multi_head.MultiHead):
      raise ValueError(
          '`MultiHead` is not supported with `SequentialHeadWrapper`.')
    self._sequence_length_mask = sequence_length_mask
    self._feature_columns = feature_columns
    self._static_head = static_head

  def _flatten(self, labels, logits, features):
    """(labels, logits, {feature_columns}) of the unmasked steps."""
    key = self.input_sequence_mask_key
    if key not in features:
      raise ValueError(
          f'The provided sequence_length_mask key `{key}` should be included '
          'in the features dictionary, but was not found. Found keys: '
          f'{list(features.keys())}.')
    mask = features[key]
    if mask.get_shape().ndims != 2:
      raise ValueError('Mask is expected to have two dimensions, got '
                       f'{mask.get_shape().ndims} instead.')
    with tf.compat.v1.name_scope('flatten'):
      length = tf.math.reduce_sum(tf.cast(mask, tf.int32))
      flat_logits = _flatten_tensor(logits, mask, length)
      flat_labels = _flatten_tensor(labels, mask, length)
      flat_features = {}
      for column in self._feature_columns:
        if column not in features:
          raise ValueError(
              f'`{column}` column expected in features dictionary.')
        flat_features[column] = _flatten_tensor(features[column], mask,
                                                length)
      return flat_labels, flat_logits, flat_features

  def loss(self, logits, labels, features=None, mode=None,  # pylint: disable=arguments-renamed
           regularization_losses=None):
    """The static head's loss of the unmasked steps (note: logits first)."""
    flat_labels, flat_logits, flat_features = self._flatten(
        labels, logits, features)
    return self._static_head.loss(
        logits=flat_logits, labels=flat_labels, features=flat_features,
        mode=mode, regularization_losses=regularization_losses)

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None):
    if mode == ModeKeys.PREDICT:
      spec = self._static_head.create_estimator_spec(
          features=features, mode=mode, logits=logits)
      spec.predictions[self.input_sequence_mask_key] = features[
          self.input_sequence_mask_key]
      return spec._replace(predictions=spec.predictions)
    flat_labels, flat_logits, flat_features = self._flatten(
        labels, logits, features)
    return self._static_head.create_estimator_spec(
        features=flat_features, mode=mode, logits=flat_logits,
        trainable_variables=trainable_variables, labels=flat_labels,
        optimizer=optimizer, train_op_fn=train_op_fn,
        regularization_losses=regularization_losses, update_ops=update_ops)

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    flat_labels, flat_logits, flat_features = self._flatten(
        labels, logits, features)
    return self._static_head.update_metrics(
        eval_metrics=eval_metrics, features=flat_features,
        logits=flat_logits, labels=flat_labels,
        regularization_losses=regularization_losses)

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, trainable_variables=None,
                                 train_op_fn=None, update_ops=None,
                                 regularization_losses=None):
    raise NotImplementedError

  def predictions(self, logits, keys=None):
    return self._static_head.predictions(logits, keys=keys)

  def metrics(self, regularization_losses=None):
    return self._static_head.metrics(regularization_losses)

  @property
  def input_sequence_mask_key(self):
    return self._sequence_length_mask

  @property
  def logits_dimension(self):
    return self._static_head.logits_dimension

  @property
  def loss_reduction(self):
    return self._static_head.loss_reduction

  @property
  def name(self):
    """'<static head name>_sequential', or None for an unnamed head."""
    if self._static_head.name:
      return f'{self._static_head.name}_sequential'
    return None

  @property
  def static_head(self):
    return self._static_head
