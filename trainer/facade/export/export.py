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

from trainer.engines.graph import inputs as graph_inputs

_SINGLE_NAMES = {'feature': 'feature', 'label': 'label',
                 'receiver_tensor': 'input',
                 'receiver_tensors_alternative': 'input'}


def _check_tensor(value, label):
  """ValueError unless value is a Tensor, SparseTensor or RaggedTensor (or,
  as Estimator allows for LabeledTensor, an object with a `.tensor` that
  converts to a Tensor)."""
  if isinstance(value, (tf.Tensor, tf.sparse.SparseTensor, tf.RaggedTensor)):
    return
  error = ValueError(f'{label} must be a Tensor, SparseTensor, or '
                     'RaggedTensor.')
  if not hasattr(value, 'tensor'):
    raise error
  try:
    tf.convert_to_tensor(value)
  except TypeError:
    raise error from None


def wrap_and_check_input_tensors(tensors, field, allow_int_keys=False):
  """tensors as a dict {name: tensor}; ValueError naming the bad entry."""
  if tensors is None:
    raise ValueError(f'{field}s must be defined.')
  if not isinstance(tensors, dict):
    tensors = {_SINGLE_NAMES[field]: tensors}
  for name, tensor in tensors.items():
    if not isinstance(name, str):
      if not allow_int_keys:
        raise ValueError(f'{field} keys must be strings: {name}.')
      if not isinstance(name, int):
        raise ValueError(f'{field} keys must be strings or ints: {name}.')
    _check_tensor(tensor, f'{field} {name}')
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
    _check_tensor(features, 'feature')
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


def _placeholder_like(tensor, default_batch_size):
  shape = tf.TensorShape([default_batch_size]).concatenate(
      tensor.shape[1:])
  try:
    name = tensor.op.name
  except AttributeError:  # An eager tensor has no op.
    name = None
  return tf.compat.v1.placeholder(tensor.dtype, shape, name=name)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
  """A receiver fn fed the features themselves: one placeholder per entry of
  `features` (dtype and shape after the batch dimension)."""

  def serving_input_receiver_fn():
    placeholders = {name: _placeholder_like(t, default_batch_size)
                    for name, t in features.items()}
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
    placeholders = {name: _placeholder_like(t, default_batch_size)
                    for name, t in tensors.items()}
    return placeholders, placeholders
  placeholder = _placeholder_like(tensors, default_batch_size)
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
