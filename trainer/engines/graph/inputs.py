"""An input_fn's result as Estimator reads it, in the graph being built.

An input_fn may return a tf.data.Dataset of (features, labels) or of
features, or the tensors themselves: (features, labels), or features alone
(a tensor or a dict). A Dataset gets an initializable iterator, initialised
by a hook when the session starts, and each session.run takes the next
element; tensors are evaluated anew at each session.run. A list or tuple of
any length but 2 is an error.
"""

import tensorflow as tf

from trainer.engines.graph import added_hooks as hooks


def features_and_labels(result):
  """(features, labels or None, input hooks) of an input_fn's result."""
  input_hooks = []
  if isinstance(result, tf.data.Dataset):
    iterator = tf.compat.v1.data.make_initializable_iterator(result)
    input_hooks.append(hooks.DatasetInitializerHook(iterator))
    result = iterator.get_next()
  features, labels = split(result)
  return features, labels, input_hooks


def split(result):
  """(features, labels) of one input element; labels None if absent."""
  if isinstance(result, (list, tuple)):
    if len(result) != 2:
      raise ValueError(
          'input_fn should return (features, labels) as a len 2 tuple.')
    return result[0], result[1]
  return result, None


def uses_dataset_or_queue(features):
  """Whether predict input ends by itself: a top-level tensor made by a
  tf.data iterator, or a graph with queue runners."""
  tensors = [t for t in tf.nest.flatten(features) if isinstance(t, tf.Tensor)]
  if any(t.op.type == 'IteratorGetNext' for t in tensors):
    return True
  return bool(tf.compat.v1.get_collection(
      tf.compat.v1.GraphKeys.QUEUE_RUNNERS))
