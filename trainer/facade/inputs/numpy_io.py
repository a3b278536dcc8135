"""tf.compat.v1.estimator.inputs.numpy_input_fn (pandas_input_fn is in
pandas_io.py, on the same batching).

Same arguments, checks and results as tensorflow_estimator's, built on
tf.data instead of queues: the input_fn returns the next batch of a
one-shot iterator over the arrays (features: a dict of tensors keyed as
`x`, sorted, or the tensor itself when `x` is an array; targets likewise),
so it works under the graph engine and the tf2 runner alike. Records come
in order, repeated num_epochs times (None: forever), in batches of
batch_size that run across epoch boundaries; with num_epochs set the last
batch may be partial, and the input then ends. shuffle=True shuffles
records through a buffer of queue_capacity (a different order than the
queue-based original, which is random too).
"""

import collections

import numpy as np
import tensorflow as tf

_TARGET_KEY = '__target_key__'


def check_shuffle(shuffle):
  if not isinstance(shuffle, bool):
    raise ValueError('shuffle must be provided and explicitly set as boolean '
                     '(it is recommended to set it as True for training); '
                     f'got {shuffle}')


def next_batch(data, batch_size, num_epochs, shuffle, queue_capacity):
  """The next-batch tensors of `data` (an ordered dict of arrays)."""
  dataset = tf.data.Dataset.from_tensor_slices(dict(data))
  if shuffle:
    dataset = dataset.shuffle(max(int(queue_capacity or 1), 1))
  dataset = dataset.repeat(num_epochs).batch(batch_size)
  return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()


# What the reference accepts as a string.
string_types = (str,)


def _get_unique_target_key(features):
  """A key `features` does not have, to pack the target in with them."""
  target_key = _TARGET_KEY
  while target_key in features:
    target_key += '_n'
  return target_key


def _validate_and_convert_features(x):
  """x (an array or dict of arrays) as an OrderedDict in key order;
  ValueError if empty, TypeError for another type."""
  if isinstance(x, dict):
    if not x:
      raise ValueError('x cannot be an empty dict')
    return collections.OrderedDict(sorted(x.items(), key=lambda t: t[0]))
  if isinstance(x, np.ndarray):
    if x.size == 0:
      raise ValueError('x cannot be an empty array')
    return collections.OrderedDict([('__direct_np_input__', x)])
  raise TypeError(f'x must be a dict or array; got {type(x).__name__}')


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                   queue_capacity=1000, num_threads=1):
  """An input_fn feeding numpy arrays: () -> features or (features, y)."""
  del num_threads  # tf.data reads in order; kept for the signature.
  check_shuffle(shuffle)

  def input_fn():
    data = _validate_and_convert_features(x)
    feature_keys = list(data)
    if y is None:
      target_keys = None
    elif isinstance(y, dict):
      if not y:
        raise ValueError('y cannot be empty dict, use None instead.')
      ordered_y = collections.OrderedDict(sorted(y.items(),
                                                 key=lambda t: t[0]))
      target_keys = list(ordered_y)
      duplicates = set(feature_keys) & set(target_keys)
      if duplicates:
        raise ValueError(f'{len(duplicates)} duplicate keys are found in both '
                         f'x and y: {duplicates}')
      data.update(ordered_y)
    else:
      target_keys = _get_unique_target_key(data)
      data[target_keys] = y
    if len({v.shape[0] for v in data.values()}) != 1:
      shapes_x = {k: data[k].shape for k in feature_keys}
      if target_keys is None:
        shape_y = None
      elif isinstance(target_keys, str):
        shape_y = y.shape
      else:
        shape_y = {k: data[k].shape for k in target_keys}
      raise ValueError('Length of tensors in x and y is mismatched. All '
                       'elements in x and y must have the same length.\n'
                       f'Shapes in x: {shapes_x}\nShapes in y: {shape_y}\n')
    batch = next_batch(data, batch_size, num_epochs, shuffle, queue_capacity)
    if isinstance(x, np.ndarray):
      features = batch['__direct_np_input__']
    else:
      features = {k: batch[k] for k in feature_keys}
    if target_keys is None:
      return features
    if isinstance(target_keys, str):
      return features, batch[target_keys]
    return features, {k: batch[k] for k in target_keys}

  return input_fn
