"""Keras 2 (tf-keras) and TensorFlow internals model_to_estimator builds on.

tensorflow_estimator's keras_lib turns a compiled Keras 2 model into a
model_fn with Keras's graph-mode (v1) training machinery: it clones the model
on the Estimator's input tensors, compiles the clone with the global step as
its optimizer's `iterations`, and takes the clone's total loss, its train
function's update op and its compiled metric objects. None of that has a
public name; TF 2.15's Keras and tf-keras 2.20/2.21 carry the same code. The
facade's keras_lib (trainer/facade/keras_lib.py) calls it here only, with
the object-checkpoint saver TF's checkpoint module makes for it. Importing
this module imports no Keras and changes nothing.
"""

import importlib
import importlib.util
import os

import tensorflow as tf
# pylint: disable=g-direct-tensorflow-import
from tensorflow.python.checkpoint import checkpoint as _checkpoint
# pylint: enable=g-direct-tensorflow-import


def _is_keras3(module):
  version = getattr(module, 'version', None)
  return callable(version) and str(version()).startswith('3.')


def keras():
  """The Keras 2 API (v2 names): tf.keras where it is Keras 2 (TF 2.15, or
  TF >= 2.16 with TF_USE_LEGACY_KERAS=1), else tf-keras's; ImportError
  saying what to install when there is none."""
  if not _is_keras3(tf.keras):
    return tf.keras
  try:
    return importlib.import_module('tf_keras')
  except ImportError as e:
    raise ImportError(
        f'model_to_estimator needs Keras 2: TensorFlow {tf.__version__} has '
        'Keras 3 as tf.keras and tf-keras is not installed (pip install '
        f'"tf-keras~={tf.__version__.rsplit(".", 1)[0]}.0").') from e


def keras_v1():
  """The Keras 2 API's v1 names (backend.set_session, get_session)."""
  if not _is_keras3(tf.keras):
    return tf.compat.v1.keras
  return importlib.import_module('tf_keras.api._v1.keras')


def is_keras2_model(model):
  """Whether `model` is a Keras 2 model (of the package keras() returns)."""
  return isinstance(model, keras().Model)


def is_graph_network(model):
  """Functional or Sequential (a graph of layers), not subclassed."""
  return bool(model._is_graph_network)  # pylint: disable=protected-access


def clone_and_build(model, input_tensors, target_tensors, custom_objects,
                    compile_clone, optimizer_iterations, optimizer_config):
  """Keras's clone of `model` on `input_tensors` (compiled against
  target_tensors when compile_clone, with `optimizer_iterations` as its
  optimizer's step); a subclassed model is reset in place."""
  internal = keras().__internal__
  return internal.models.clone_and_build_model(
      model, input_tensors, target_tensors, custom_objects,
      compile_clone=compile_clone,
      in_place_reset=not is_graph_network(model),
      optimizer_iterations=optimizer_iterations,
      optimizer_config=optimizer_config)


def track_variable(variable):
  """Has Keras's backend initialise `variable` with the model's own."""
  keras().__internal__.backend.track_variable(variable)


def initialize_variables(session):
  """Initialises the Keras variables `session` has not yet."""
  keras().__internal__.backend.initialize_variables(session)


def weight_with_sample_weights(model, sample_weights):
  """Recomputes a compiled clone's total loss with per-output weights."""
  model._compile_weights_loss_and_weighted_metrics(sample_weights)  # pylint: disable=protected-access


def compiled_metrics(model):
  """The metric objects compile() made (not add_metric's); None when the
  model was compiled without metrics."""
  if not getattr(model, '_compile_metrics', None):
    return None
  return list(model._compile_metric_functions)  # pylint: disable=protected-access


def train_loss_and_op(model):
  """(total loss, update op) of a compiled clone's train function."""
  model._make_train_function()  # pylint: disable=protected-access
  return model.total_loss, model.train_function.updates_op


def make_train_function(model):
  model._make_train_function()  # pylint: disable=protected-access


def test_loss(model):
  """The total loss of a compiled clone's test function."""
  model._make_test_function()  # pylint: disable=protected-access
  return model.total_loss


def restore_subclassed_state(original):
  """Puts back the attributes cloning a subclassed model in place replaced
  (its optimizer, its iterations), so that model_fn leaves it unchanged."""
  if is_graph_network(original):
    return
  if getattr(original, '_original_attributes_cache', None) is None:
    return
  keras().__internal__.models.in_place_subclassed_model_state_restoration(
      original)


def track_global_step(model, global_step):
  """Adds the global step to the model's object graph
  (`estimator_global_step`), as the object checkpoints keep it."""
  model._track_trackable(global_step, 'estimator_global_step')  # pylint: disable=protected-access


def object_checkpoint_saver(model):
  """A tf.compat.v1 Saver writing `model`'s variables under their object
  keys (`layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE`, ...) with
  the object graph, that restores name-based checkpoints too."""
  graph_view = tf.compat.v2.__internal__.tracking.ObjectGraphView(model)
  saver = tf.compat.v1.train.Saver(
      var_list=graph_view.frozen_saveable_objects(), sharded=True)
  saver._object_restore_saver = _checkpoint.frozen_saver(model)  # pylint: disable=protected-access
  return saver


def legacy_optimizer(optimizer):
  """A Keras 2 optimizer of the new kind as its legacy (v1-graph) twin."""
  return keras().__internal__.optimizers.convert_to_legacy_optimizer(
      optimizer)


def is_new_optimizer(optimizer):
  """Whether a Keras 2 optimizer is of the new kind, which v1 graphs (and
  so Estimators) cannot train with."""
  return isinstance(optimizer, keras().optimizers.experimental.Optimizer)


def tf_keras_estimator_modules():
  """{tf or tf.compat.v1: tf-keras's keras.estimator module of that API}
  when tf.keras is Keras 3 (TF >= 2.16 without TF_USE_LEGACY_KERAS) and
  tf-keras is installed; else {} (tf.keras, Keras 2, has its own). Loads
  Keras only in that case."""
  legacy = os.environ.get('TF_USE_LEGACY_KERAS', '').lower() in ('1', 'true')
  if legacy or not hasattr(tf, 'keras') or (
      importlib.util.find_spec('tf_keras') is None):
    return {}
  try:
    if not _is_keras3(tf.keras):
      return {}
    return {tf: importlib.import_module('tf_keras.api._v2.keras.estimator'),
            tf.compat.v1: importlib.import_module(
                'tf_keras.api._v1.keras.estimator')}
  except ImportError:
    return {}
