"""TensorFlow internals the facade's canned Estimators build on.

The canned Estimators (trainer/facade/canned) turn feature columns into
variables and tensors exactly as tensorflow_estimator 2.15 does, which takes
TensorFlow's feature-column machinery below its public API: the v1 linear
model and input layer, the v2 columns' state managers, weighted sums and
variable-scope names, the pure variable scope Keras layers use; and Keras 2's
conversion of a new-style optimizer to a legacy one. TF 2.15 and 2.20 both
ship them; this is the one module that reaches them. Importing it changes
nothing.
"""

import tensorflow as tf
# pylint: disable=g-direct-tensorflow-import
from tensorflow.python.feature_column import feature_column as _fc_v1
from tensorflow.python.feature_column import feature_column_lib as _fc_lib
from tensorflow.python.feature_column import feature_column_v2 as _fc_v2
from tensorflow.python.feature_column import serialization as _serialization
from tensorflow.python.ops import variable_scope as _variable_scope
from tensorflow.python.ops import variables as _variables
# pylint: enable=g-direct-tensorflow-import

_internal = tf.compat.v2.__internal__.feature_column

# Column classes (v2, and the v1 ones canned Estimators check for).
CategoricalColumn = _fc_v2.CategoricalColumn
DenseColumn = _internal.DenseColumn
NumericColumn = _fc_v2.NumericColumn
NumericColumnV1 = _fc_v1._NumericColumn  # pylint: disable=protected-access
StateManager = _internal.StateManager
TransformationCache = _internal.FeatureTransformationCache

# v1 models over v1 (or mixed) columns: get_variable based, partitionable.
LinearModelV1 = _fc_v1._LinearModel  # pylint: disable=protected-access
InputLayerV1 = _fc_v1.InputLayer

PartitionedVariable = _variables.PartitionedVariable


def is_v2(feature_columns):
  """Whether every column is a v2 feature column."""
  return _fc_lib.is_feature_column_v2(feature_columns)


def normalize(feature_columns):
  """The columns as a sorted-by-name list; ValueError on duplicates or
  anything that is not a feature column."""
  return _fc_v2._normalize_feature_columns(feature_columns)  # pylint: disable=protected-access


def scope_name(column):
  """The variable-scope name TF gives a column's variables."""
  return _fc_v2._sanitize_column_name_for_variable_scope(column.name)  # pylint: disable=protected-access


def weighted_sum(column, cache, state_manager, sparse_combiner, weight_var):
  """A column's contribution to a linear model: its dense tensor or its
  sparse ids (combined by sparse_combiner) times weight_var."""
  return _fc_v2._create_weighted_sum(  # pylint: disable=protected-access
      column=column, transformation_cache=cache, state_manager=state_manager,
      sparse_combiner=sparse_combiner, weight_var=weight_var)


def check_same_batch_size(tensors, feature_columns):
  """ValueError if the tensors' static batch sizes differ."""
  _fc_v2._verify_static_batch_size_equality(tensors, feature_columns)  # pylint: disable=protected-access


def pure_variable_scope(name):
  """A variable scope that opens no name scope (as Keras layers use)."""
  return _variable_scope._pure_variable_scope(name)  # pylint: disable=protected-access


def is_resource_variable(value):
  return tf.compat.v2.__internal__.ops.is_resource_variable(value)


def current_name_scope():
  """The graph's current name scope ('' at the top)."""
  return tf.compat.v2.__internal__.get_name_scope()


def concatenate_context_input(context_input, sequence_input):
  """Context features tiled along the sequence and appended to it."""
  return _fc_lib.concatenate_context_input(context_input, sequence_input)


def serialize_columns(feature_columns):
  return _serialization.serialize_feature_columns(feature_columns)


def deserialize_columns(configs, custom_objects=None):
  return _serialization.deserialize_feature_columns(
      configs, custom_objects=custom_objects)


def to_legacy_keras_optimizer(optimizer):
  """A tf.keras.optimizers.legacy optimizer configured as `optimizer`."""
  return tf.keras.__internal__.optimizers.convert_to_legacy_optimizer(
      optimizer)


def enable_caching_device(cell):
  """Lets a Keras RNN cell cache its variables' reads across time steps
  (tensorflow_estimator's RNN Estimators turn it on), where the cell can."""
  if hasattr(cell, '_enable_caching_device'):
    cell._enable_caching_device = True  # pylint: disable=protected-access
