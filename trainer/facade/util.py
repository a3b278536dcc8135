"""tensorflow_estimator's util.py of the facade: how an input_fn's result is
read, and the hooks that initialise input iterators.

parse_input_fn_result(result) -> (features, labels or None, input hooks);
parse_iterator_result(result) -> (features, labels or None) of one element;
_DatasetInitializerHook, DistributedIteratorInitializerHook (a strategy's
iterator) and MultiHostDatasetInitializerHook (initializer ops) initialise
them when the session starts; fn_args(fn), the argument names Estimator
reads of a model_fn or input_fn.
"""

import time

import tensorflow as tf

from trainer.compat import estimator_calls
from trainer.engines.graph import added_hooks
from trainer.engines.graph import distributed_train
from trainer.engines.graph import inputs

# How often Estimator's export retries a taken timestamped directory.
MAX_DIRECTORY_CREATION_ATTEMPTS = 10

fn_args = estimator_calls.fn_args
parse_input_fn_result = inputs.features_and_labels
parse_iterator_result = inputs.split
_DatasetInitializerHook = added_hooks.DatasetInitializerHook
DistributedIteratorInitializerHook = distributed_train.IteratorInitializerHook


class MultiHostDatasetInitializerHook(tf.compat.v1.train.SessionRunHook):
  """Runs dataset initializer ops when the session starts."""

  def __init__(self, dataset_initializers):
    self._initializers = dataset_initializers

  def after_create_session(self, session, coord):
    del coord
    start = time.time()
    session.run(self._initializers)
    tf.compat.v1.logging.info('Initialized dataset iterators in %d seconds',
                              time.time() - start)
