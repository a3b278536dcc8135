"""tf.estimator.classifier_parse_example_spec / regressor_parse_example_spec.

The tf.io.parse_example spec of a canned Estimator's training data: its
feature columns' spec, plus a FixedLenFeature for the label and, when there
is one, the weight column's feature (tensorflow_estimator 2.15's contract).
The v1 functions (tf.compat.v1.estimator) read v1 or v2 columns.
"""

import tensorflow as tf

from trainer.compat import canned as canned_private


def _add_label_and_weight_to_parsing_spec(parsing_spec, label_key, label_spec,
                                          weight_column=None):
  """`parsing_spec` plus the label's and the weight column's features."""
  if label_key in parsing_spec:
    raise ValueError('label should not be used as feature. label_key: '
                     f'{label_key}, features: {parsing_spec.keys()}')
  parsing_spec[label_key] = label_spec
  if weight_column is None:
    return parsing_spec
  if isinstance(weight_column, str):
    weight_column = tf.feature_column.numeric_column(weight_column)
  if not isinstance(weight_column, canned_private.NumericColumn):
    raise ValueError('weight_column should be an instance of '
                     'tf.feature_column.numeric_column. Given type: '
                     f'{type(weight_column)} value: {weight_column}')
  if weight_column.key in parsing_spec:
    raise ValueError('weight_column should not be used as feature. '
                     f'weight_column: {weight_column.key}, features: '
                     f'{parsing_spec.keys()}')
  parsing_spec.update(weight_column.parse_example_spec)
  return parsing_spec


def classifier_parse_example_spec_v2(feature_columns, label_key,
                                     label_dtype=tf.int64, label_default=None,
                                     weight_column=None):
  """tf.estimator.classifier_parse_example_spec: the columns' spec, a [1]
  label of label_dtype under label_key, and the weight column's feature."""
  return _add_label_and_weight_to_parsing_spec(
      tf.feature_column.make_parse_example_spec(feature_columns), label_key,
      tf.io.FixedLenFeature((1,), label_dtype, label_default), weight_column)


def regressor_parse_example_spec_v2(feature_columns, label_key,
                                    label_dtype=tf.float32,
                                    label_default=None, label_dimension=1,
                                    weight_column=None):
  """tf.estimator.regressor_parse_example_spec: the columns' spec, a
  [label_dimension] label under label_key, and the weight column's."""
  return _add_label_and_weight_to_parsing_spec(
      tf.feature_column.make_parse_example_spec(feature_columns), label_key,
      tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default),
      weight_column)


def classifier_parse_example_spec(feature_columns, label_key,
                                  label_dtype=tf.int64, label_default=None,
                                  weight_column=None):
  """tf.compat.v1.estimator.classifier_parse_example_spec (v1 columns)."""
  return _add_label_and_weight_to_parsing_spec(
      tf.compat.v1.feature_column.make_parse_example_spec(feature_columns),
      label_key, tf.io.FixedLenFeature((1,), label_dtype, label_default),
      weight_column)


def regressor_parse_example_spec(feature_columns, label_key,
                                 label_dtype=tf.float32, label_default=None,
                                 label_dimension=1, weight_column=None):
  """tf.compat.v1.estimator.regressor_parse_example_spec (v1 columns)."""
  return _add_label_and_weight_to_parsing_spec(
      tf.compat.v1.feature_column.make_parse_example_spec(feature_columns),
      label_key,
      tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default),
      weight_column)
