"""Calls an unmodified TF1 model_fn repeatedly in TF2 (eager / tf.function).

`ModelFnModule` owns every variable the model_fn makes, under its TF1 name:
  * get_variable goes through the tf-keras variable store
    (track_tf1_style_variables), so each call reuses the same variables;
  * graph collections (GLOBAL/TRAINABLE_VARIABLES, UPDATE_OPS, LOSSES, ...)
    start empty on every call and receive the variables get_variable returns,
    so `optimizer.minimize(loss)`, `tf.compat.v1.trainable_variables()` and
    UPDATE_OPS behave as in a TF1 graph;
  * variables made with plain tf.Variable (Adam's beta1_power, optimizer
    slots created under init_scope) are created once and returned by name
    on later calls, as a TF1 graph built once would;
  * global_step exists before the model_fn runs, as under Estimator;
  * non-trainable float variables updated in the replica context (batch-norm
    moving averages) get MEAN aggregation so MirroredStrategy accepts them.
"""

import collections
import contextlib

import tensorflow as tf

from model_fn import layers
from trainer.compat import tf_private

_v1 = tf.compat.v1
_KEYS = sorted({v for k, v in vars(_v1.GraphKeys).items()
                if not k.startswith('_') and isinstance(v, str)})
_NONE = tf.VariableAggregation.NONE
_track_tf1_style_variables = tf_private.track_tf1_style_variables()


def features_labels(element):
  """(features, labels) of a dataset element; labels None if there are none."""
  if isinstance(element, (tuple, list)) and len(element) == 2:
    return element[0], element[1]
  return element, None


def plain(fn):
  """fn exempt from AutoGraph: model_fns run as plain Python, as in TF1."""
  return tf.autograph.experimental.do_not_convert(fn)


@contextlib.contextmanager
def fresh_collections():
  """Empties the graph collections for the duration, then restores them."""
  graph = _v1.get_default_graph()
  saved = {key: list(graph.get_collection(key)) for key in _KEYS}
  for key in _KEYS:
    del graph.get_collection_ref(key)[:]
  try:
    yield
  finally:
    for key in _KEYS:
      ref = graph.get_collection_ref(key)
      ref[:] = saved[key]


def _collecting_getter(getter, *args, **kwargs):
  """get_variable custom getter: adds what it returns to the collections."""
  trainable = kwargs.get('trainable')
  if trainable is None:
    trainable = kwargs.get('synchronization') != tf.VariableSynchronization.ON_READ
  aggregation = kwargs.get('aggregation') or _NONE
  if not trainable and aggregation == _NONE:
    dtype = tf.as_dtype(kwargs.get('dtype') or tf.float32)
    kwargs['aggregation'] = (tf.VariableAggregation.MEAN if dtype.is_floating
                             else tf.VariableAggregation.ONLY_FIRST_REPLICA)
  variable = getter(*args, **kwargs)
  names = list(kwargs.get('collections') or [_v1.GraphKeys.GLOBAL_VARIABLES])
  if trainable and _v1.GraphKeys.TRAINABLE_VARIABLES not in names:
    names.append(_v1.GraphKeys.TRAINABLE_VARIABLES)
  graph = _v1.get_default_graph()
  for name in names:
    if not any(v is variable for v in graph.get_collection(name)):
      graph.add_to_collection(name, variable)
  return variable


class ModelFnModule(tf.Module):
  """A model_fn bound to one set of variables; call it like the model_fn.

  Make it, and trace calls that create variables, inside the strategy scope
  and inside `creation_scope()`.
  """

  def __init__(self, model_fn, name='model_fn'):
    super().__init__(name=name)
    self._model_fn = model_fn
    self.created = {}  # Variables made outside get_variable, by TF1 name.
    self._seen = collections.Counter()  # Names created in the current call.

  @_track_tf1_style_variables
  def __call__(self, features, labels, mode, params):
    """The model_fn's TPUEstimatorSpec, built on this module's variables."""
    self._seen.clear()
    scope = _v1.get_variable_scope()
    with fresh_collections(), _v1.variable_scope(
        scope, custom_getter=_collecting_getter, auxiliary_name_scope=False):
      _v1.train.get_or_create_global_step()  # Estimator makes it first too.
      return self._model_fn(features, labels, mode, params)

  @_track_tf1_style_variables
  def run_in_variable_store(self, fn):
    """fn() with this module's get_variable store as the default store.

    For a spec's scaffold_fn: init_from_checkpoint finds variables by name.
    """
    return fn()

  def _creator(self, next_creator, **kwargs):
    base = kwargs.get('name') or 'Variable'
    index = self._seen[base]
    self._seen[base] += 1
    name = base if index == 0 else f'{base}_{index}'
    if name not in self.created:
      kwargs['name'] = name
      self.created[name] = next_creator(**kwargs)
    return self.created[name]

  def creation_scope(self):
    """Variable-creator scope returning earlier calls' tf.Variables by name.

    Enter it eagerly (outside tf.function) so that init_scope sees it too.
    """
    return tf.variable_creator_scope(self._creator)

  def variables_by_name(self):
    """{TF1 name: variable} of every variable the model_fn has made."""
    result = {}
    for variable in self.variables:
      result.setdefault(layers.variable_name(variable), variable)
    return dict(sorted(result.items()))
