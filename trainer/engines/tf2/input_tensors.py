"""The tf.data.Dataset an input_fn stands for, when it returns tensors.

Estimator and TPUEstimator accept an input_fn that returns tensors instead
of a Dataset: `make_one_shot_iterator(dataset).get_next()`, possibly with
more ops applied to them, or tensors made otherwise (constants, random
ops), which a TF1 session evaluates anew at every step. Under tf.distribute
each input pipeline needs a Dataset, so `input_dataset(call)` gives:
  * the Dataset itself when the input_fn returns one;
  * for an iterator's tensors: the iterator's dataset, mapped through what
    the input_fn does to get_next()'s tensors (the input_fn is called again
    inside the map function, its iterator giving the element), so each
    element is what a session.run of the returned tensors would give;
  * for tensors made without an iterator: an endless dataset whose every
    element evaluates the input_fn's tensors anew (a TF1 session's
    semantics: the same constants, new random draws at each step).
An input_fn that makes several iterators is refused, naming the alternative.
"""

import tensorflow as tf

from trainer.api import errors
from trainer.compat import iterator_capture


class InputFnTensorsError(errors.TrainerError, ValueError):
  """An input_fn's tensors that no tf.data.Dataset can stand for."""


class _ElementIterator:
  """What an iterator of the input_fn's dataset is inside the map function:
  get_next() gives the element being mapped."""

  def __init__(self, dataset, element):
    self._dataset = dataset
    self._element = element
    self.element_spec = dataset.element_spec
    self.initializer = tf.no_op()

  def get_next(self, name=None):
    del name
    return self._element

  @property
  def output_types(self):
    return tf.compat.v1.data.get_output_types(self._dataset)

  @property
  def output_shapes(self):
    return tf.compat.v1.data.get_output_shapes(self._dataset)


def _first_dataset(call):
  """(the input_fn's result, the datasets it made iterators of); its
  iterators run eagerly, for this first call only."""
  datasets = []

  def capture(dataset):
    datasets.append(dataset)
    return _EagerIterator(iter(dataset))

  with iterator_capture.capturing(capture):
    result = call()
  return result, datasets


class _EagerIterator:
  """An eager iterator with TF1's get_next() (the first, probing call)."""

  def __init__(self, iterator):
    self._iterator = iterator
    self.element_spec = iterator.element_spec
    self.initializer = None

  def get_next(self, name=None):
    del name
    return next(self._iterator)


def input_dataset(call, name='input_fn'):
  """The Dataset `call()` (an input_fn with its arguments) stands for."""
  result, datasets = _first_dataset(call)
  if isinstance(result, tf.data.Dataset):
    return result
  if len(datasets) > 1:
    raise InputFnTensorsError(
        f'{name} makes {len(datasets)} iterators; the tf2 runner can stand '
        'for one: return the tf.data.Dataset (zip datasets with '
        'tf.data.Dataset.zip).')
  try:
    if not datasets:  # Tensors evaluated anew at each step, as in TF1.
      return tf.data.Dataset.from_tensors(0).repeat().map(
          lambda _: call())
    dataset = datasets[0]

    def element_to_result(*element):
      element = element[0] if len(element) == 1 else element
      with iterator_capture.capturing(
          lambda made: _ElementIterator(made, element)):
        return call()

    return dataset.map(element_to_result)
  except (TypeError, ValueError) as e:
    raise InputFnTensorsError(
        f'{name} returned tensors that cannot be turned into a '
        f'tf.data.Dataset ({type(e).__name__}: {e}); return the '
        'tf.data.Dataset itself.') from e
