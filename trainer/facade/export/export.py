"""tf.estimator.export's input receivers of the facade (the export outputs
are in export_output.py).

The receivers (serving, and the supervised and unsupervised ones TRAIN/EVAL
exports take) and receiver-fn builders behave as Estimator's: a single
tensor becomes a one-entry dict ('feature' for features, 'input' for
receiver tensors), keys must be strings (features may also use ints), values
Tensor, SparseTensor or RaggedTensor.
"""

import collections

import tensorflow as tf

from trainer.compat import estimator_reexports
from trainer.engines.graph import inputs as graph_inputs

# TF's export utilities the reference's export module re-exports.
build_all_signature_defs = estimator_reexports.build_all_signature_defs
get_temp_export_dir = estimator_reexports.get_temp_export_dir
get_timestamped_export_dir = estimator_reexports.get_timestamped_export_dir

SINGLE_FEATURE_DEFAULT_NAME = 'feature'
SINGLE_RECEIVER_DEFAULT_NAME = 'input'
SINGLE_LABEL_DEFAULT_NAME = 'label'
_SINGLE_TENSOR_DEFAULT_NAMES = {
    'feature': SINGLE_FEATURE_DEFAULT_NAME,
    'label': SINGLE_LABEL_DEFAULT_NAME,
    'receiver_tensor': SINGLE_RECEIVER_DEFAULT_NAME,
    'receiver_tensors_alternative': SINGLE_RECEIVER_DEFAULT_NAME}
_SINGLE_NAMES = _SINGLE_TENSOR_DEFAULT_NAMES


def _check_tensor(tensor, name, error_label='feature'):
  """ValueError unless `tensor` is a Tensor, SparseTensor or RaggedTensor
  (or, as Estimator allows for LabeledTensor, an object with a `.tensor`
  that converts to a Tensor)."""
  if isinstance(tensor, (tf.Tensor, tf.sparse.SparseTensor, tf.RaggedTensor)):
    return
  label = f'{error_label} {name}' if name else error_label
  error = ValueError(f'{label} must be a Tensor, SparseTensor, or '
                     'RaggedTensor.')
  if not hasattr(tensor, 'tensor'):
    raise error
  try:
    tf.convert_to_tensor(tensor)
  except TypeError:
    raise error from None


def _check_tensor_key(name, error_label='feature', allow_ints=False):
  """ValueError unless `name` is a string (or, allow_ints, an int)."""
  if not isinstance(name, str):
    if not allow_ints:
      raise ValueError(f'{error_label} keys must be strings: {name}.')
    if not isinstance(name, int):
      raise ValueError(f'{error_label} keys must be strings or ints: {name}.')


def wrap_and_check_input_tensors(tensors, field_name, allow_int_keys=False):
  """tensors as a dict {name: tensor}; ValueError naming the bad entry."""
  if tensors is None:
    raise ValueError(f'{field_name}s must be defined.')
  if not isinstance(tensors, dict):
    tensors = {_SINGLE_TENSOR_DEFAULT_NAMES[field_name]: tensors}
  for name, tensor in tensors.items():
    _check_tensor_key(name, error_label=field_name, allow_ints=allow_int_keys)
    _check_tensor(tensor, name, error_label=field_name)
  return tensors


class ServingInputReceiver(collections.namedtuple(
    'ServingInputReceiver',
    ['features', 'receiver_tensors', 'receiver_tensors_alternatives'])):
  """What a serving_input_receiver_fn returns: model features and the
  tensors a serving request feeds."""

  def __new__(cls, features, receiver_tensors,
              receiver_tensors_alternatives=None):
    features = wrap_and_check_input_tensors(features, 'feature',
                                            allow_int_keys=True)
    receiver_tensors = wrap_and_check_input_tensors(receiver_tensors,
                                                    'receiver_tensor')
    if receiver_tensors_alternatives is not None:
      if not isinstance(receiver_tensors_alternatives, dict):
        raise ValueError('receiver_tensors_alternatives must be a dict: '
                         f'{receiver_tensors_alternatives!r}.')
      receiver_tensors_alternatives = {
          name: wrap_and_check_input_tensors(
              alternative, 'receiver_tensors_alternative')
          for name, alternative in receiver_tensors_alternatives.items()}
    return super().__new__(cls, features, receiver_tensors,
                           receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple(
    'TensorServingInputReceiver',
    ['features', 'receiver_tensors', 'receiver_tensors_alternatives'])):
  """A ServingInputReceiver whose features are one tensor, passed as is."""

  def __new__(cls, features, receiver_tensors,
              receiver_tensors_alternatives=None):
    if features is None:
      raise ValueError('features must be defined.')
    _check_tensor(features, None)
    receiver = ServingInputReceiver(features, receiver_tensors,
                                    receiver_tensors_alternatives)
    return super().__new__(cls, receiver.features['feature'],
                           receiver.receiver_tensors,
                           receiver.receiver_tensors_alternatives)


def build_parsing_serving_input_receiver_fn(feature_spec,
                                            default_batch_size=None):
  """A receiver fn fed serialized tf.Examples (key 'examples'), parsed with
  `feature_spec`."""

  def serving_input_receiver_fn():
    serialized = tf.compat.v1.placeholder(
        tf.string, [default_batch_size], name='input_example_tensor')
    features = tf.io.parse_example(serialized, feature_spec)
    return ServingInputReceiver(features, {'examples': serialized})

  return serving_input_receiver_fn


def _placeholder_from_tensor(t, default_batch_size=None):
  """A placeholder like `t` (dtype, shape after the batch dimension, its
  op's name), with batch dimension default_batch_size."""
  shape = tf.TensorShape([default_batch_size]).concatenate(t.shape[1:])
  try:
    name = t.op.name
  except AttributeError:  # An eager tensor has no op.
    name = None
  return tf.compat.v1.placeholder(dtype=t.dtype, shape=shape, name=name)


def _placeholders_from_receiver_tensors_dict(input_vals,
                                             default_batch_size=None):
  return {name: _placeholder_from_tensor(t, default_batch_size)
          for name, t in input_vals.items()}


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
  """A receiver fn fed the features themselves: one placeholder per entry of
  `features` (dtype and shape after the batch dimension)."""

  def serving_input_receiver_fn():
    placeholders = _placeholders_from_receiver_tensors_dict(
        features, default_batch_size)
    return ServingInputReceiver(placeholders, placeholders)

  return serving_input_receiver_fn


class UnsupervisedInputReceiver(ServingInputReceiver):
  """What a TRAIN/EVAL receiver fn returns for a model without labels."""

  def __new__(cls, features, receiver_tensors):
    return super().__new__(cls, features, receiver_tensors, None)


class SupervisedInputReceiver(collections.namedtuple(
    'SupervisedInputReceiver', ['features', 'labels', 'receiver_tensors'])):
  """What a TRAIN/EVAL receiver fn returns: features and labels as the
  model_fn takes them (a tensor or a dict each, kept as given) and the
  tensors a request feeds (as a dict)."""

  def __new__(cls, features, labels, receiver_tensors):
    wrap_and_check_input_tensors(features, 'feature', allow_int_keys=True)
    wrap_and_check_input_tensors(labels, 'label', allow_int_keys=True)
    receiver_tensors = wrap_and_check_input_tensors(receiver_tensors,
                                                    'receiver_tensor')
    return super().__new__(cls, features, labels, receiver_tensors)


def _keys(tensors, single_name):
  return list(tensors) if isinstance(tensors, dict) else [single_name]


def _placeholders(tensors, single_name, default_batch_size):
  """(what the model_fn gets, {name: placeholder} a request feeds)."""
  if isinstance(tensors, dict):
    placeholders = _placeholders_from_receiver_tensors_dict(
        tensors, default_batch_size)
    return placeholders, placeholders
  placeholder = _placeholder_from_tensor(tensors, default_batch_size)
  return placeholder, {single_name: placeholder}


def build_raw_supervised_input_receiver_fn(features, labels,
                                           default_batch_size=None):
  """A TRAIN/EVAL receiver fn fed features and labels as the model_fn takes
  them: a placeholder like each tensor (dtype, shape after the batch
  dimension). A lone tensor is fed as 'input' (features) or 'label'.
  ValueError if features and labels share a key."""
  overlap = set(_keys(features, _SINGLE_NAMES['receiver_tensor'])) & set(
      _keys(labels, _SINGLE_NAMES['label']))
  if overlap:
    raise ValueError('Features and labels must have distinct keys. Found '
                     f'overlapping keys: {overlap}')

  def supervised_input_receiver_fn():
    feature_values, fed = _placeholders(
        features, _SINGLE_NAMES['receiver_tensor'], default_batch_size)
    label_values, fed_labels = _placeholders(labels, _SINGLE_NAMES['label'],
                                             default_batch_size)
    return SupervisedInputReceiver(feature_values, label_values,
                                   dict(fed, **fed_labels))

  return supervised_input_receiver_fn


def build_supervised_input_receiver_fn_from_input_fn(input_fn,
                                                     **input_fn_args):
  """build_raw_supervised_input_receiver_fn of the features and labels
  input_fn(**input_fn_args) gives, read in a graph of their own."""
  with tf.Graph().as_default():
    features, labels, _ = graph_inputs.features_and_labels(
        input_fn(**input_fn_args))
  return build_raw_supervised_input_receiver_fn(features, labels)
