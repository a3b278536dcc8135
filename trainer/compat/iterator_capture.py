"""Intercepts the TF1 ways an input_fn makes an iterator of a tf.data.Dataset.

A TF1 input_fn may return `make_one_shot_iterator(dataset).get_next()`
rather than the dataset. Inside `capturing(make)`, every such call
(tf.compat.v1.data.make_one_shot_iterator / make_initializable_iterator and
the DatasetV1 methods of the same names) returns `make(dataset)` instead of
a real iterator: the caller learns the dataset and chooses what get_next()
gives. These entry points are TF's private dataset_ops module and the
tf.compat.v1.data API module; the same on TF 2.15-2.21
(tests/engines/tf2_input_tensors_test.py).
"""

import contextlib
import threading

import tensorflow as tf

_lock = threading.RLock()
_FUNCTIONS = ('make_one_shot_iterator', 'make_initializable_iterator')


def _dataset_v1_class():
  from tensorflow.python.data.ops import dataset_ops  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return dataset_ops.DatasetV1


@contextlib.contextmanager
def capturing(make):
  """Within the block, making a TF1 iterator of a dataset returns
  make(dataset)."""
  api = tf.compat.v1.data
  cls = _dataset_v1_class()
  with _lock:
    saved = ({n: getattr(api, n) for n in _FUNCTIONS},
             {n: cls.__dict__[n] for n in _FUNCTIONS if n in cls.__dict__})

    def function(dataset, shared_name=None):
      del shared_name
      return make(dataset)

    def method(self, shared_name=None):
      del shared_name
      return make(self)

    for name in _FUNCTIONS:
      setattr(api, name, function)
      setattr(cls, name, method)
    try:
      yield
    finally:
      for name, value in saved[0].items():
        setattr(api, name, value)
      for name in _FUNCTIONS:
        if name in saved[1]:
          setattr(cls, name, saved[1][name])
        else:
          delattr(cls, name)
