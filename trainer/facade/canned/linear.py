"""Linear Estimators: tf.estimator.LinearClassifier, LinearRegressor,
LinearEstimator, tf.estimator.experimental.LinearSDCA, and their v1 forms.

Same model, variables and training as tensorflow_estimator 2.15's:
  * v2 (tf.estimator.*): v2 feature columns only; a `LinearModel` layer named
    'linear/linear_model' holds one `weights` variable per column
    ([num_buckets or dimension, units]) and `bias_weights` ([units]); a Keras
    legacy optimizer (default 'Ftrl' at learning rate 0.2) whose `iterations`
    is global_step; loss reduced SUM_OVER_BATCH_SIZE.
  * v1 (tf.compat.v1.estimator.*): v1 or v2 columns under
    variable_scope('linear') with a min-max partitioner (one partition per ps
    task, 64 MB slices) unless `partitioner` is given; a
    tf.compat.v1.train optimizer; v1 heads, loss reduced SUM.
  * LinearSDCA as optimizer: trained by the SDCA ops (canned/sdca_ops.py).
Summaries: `bias` (a scalar for one unit, else a histogram) and
`fraction_of_zero_weights`.
"""

import math

import tensorflow as tf

from trainer.api import specs
from trainer.compat import canned as canned_private
from trainer.facade import estimator
from trainer.facade.canned import head as head_v1
from trainer.facade.canned import optimizers
from trainer.facade.canned import sdca_ops
from trainer.facade.head import binary_class_head
from trainer.facade.head import head_utils
from trainer.facade.head import regression_head

ModeKeys = specs.ModeKeys
# Loss reductions: the v2 Estimators' default (a tf.losses.Reduction, as
# their heads take) and the v1 ones'.
_SUM_OVER_BATCH_SIZE = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_SUM = tf.compat.v1.losses.Reduction.SUM
# tensorflow_estimator's name of the SDCA trainer's hook.
_SDCAUpdateWeightsHook = sdca_ops.UpdateWeightsHook

# tensorflow_estimator's default learning rate of its linear models.
_LEARNING_RATE = 0.2

_V1_COLUMNS_IN_V2 = (
    'Received a feature column from TensorFlow v1, but this is a TensorFlow '
    'v2 Estimator. Please either use v2 feature columns (accessible via '
    'tf.feature_column.* in TF 2.x) with this Estimator, or switch to a v1 '
    'Estimator for use with v1 feature columns (accessible via '
    'tf.compat.v1.estimator.* and tf.compat.v1.feature_column.*, '
    'respectively.')


# -- the model --------------------------------------------------------------


class _LinearModelLayer(tf.keras.layers.Layer):
  """A weighted sum of feature columns plus a bias: [batch, units] logits.

  Dense columns contribute their values times `weights` ([dimension, units]);
  categorical columns their ids' rows of `weights` ([num_buckets, units]),
  combined over a multivalent example by sparse_combiner ('sum', 'mean' or
  'sqrtn'). The variables are made with get_variable under the layer's name
  as variable scope ('NAME/COLUMN/weights', 'NAME/bias_weights'), so an
  enclosing partitioner applies to them.
  """

  def __init__(self, feature_columns, units=1, sparse_combiner='sum',
               trainable=True, name=None, **kwargs):
    super().__init__(name=name, trainable=trainable, **kwargs)
    self._feature_columns = canned_private.normalize(feature_columns)
    for column in self._feature_columns:
      if not isinstance(column, (canned_private.DenseColumn,
                                 canned_private.CategoricalColumn)):
        raise ValueError('Items of feature_columns must be either a '
                         f'DenseColumn or CategoricalColumn. Given: {column}')
    self._units = units
    self._sparse_combiner = sparse_combiner
    self._state_manager = canned_private.StateManager(self, self.trainable)
    self.bias = None

  @property
  def state_manager(self):
    """The feature columns' state (their variables and resources)."""
    return self._state_manager

  @property
  def feature_columns(self):
    return list(self._feature_columns)

  def build(self, _):
    with canned_private.pure_variable_scope(self.name):
      for column in self._feature_columns:
        with canned_private.pure_variable_scope(
            canned_private.scope_name(column)):
          column.create_state(self._state_manager)
          if isinstance(column, canned_private.CategoricalColumn):
            rows = column.num_buckets
          else:
            rows = column.variable_shape.num_elements()
          self._state_manager.create_variable(
              column, name='weights', dtype=tf.float32,
              shape=(rows, self._units),
              initializer=tf.keras.initializers.zeros(),
              trainable=self.trainable)
      self.bias = self.add_weight(
          name='bias_weights', dtype=tf.float32, shape=[self._units],
          initializer=tf.keras.initializers.zeros(), trainable=self.trainable,
          use_resource=True, getter=tf.compat.v1.get_variable)
    super().build(None)

  def call(self, features):
    if not isinstance(features, dict):
      raise ValueError(
          f'We expected a dictionary here. Instead we got: {features}')
    with tf.compat.v1.name_scope(self.name):
      cache = canned_private.TransformationCache(features)
      sums = []
      for column in self._feature_columns:
        with tf.compat.v1.name_scope(canned_private.scope_name(column)):
          sums.append(canned_private.weighted_sum(
              column, cache, self._state_manager, self._sparse_combiner,
              self._state_manager.get_variable(column, 'weights')))
      canned_private.check_same_batch_size(sums, self._feature_columns)
      without_bias = tf.math.add_n(sums, name='weighted_sum_no_bias')
      return tf.nn.bias_add(without_bias, self.bias, name='weighted_sum')

  def get_config(self):
    config = super().get_config()
    config.update(
        feature_columns=canned_private.serialize_columns(
            self._feature_columns),
        units=self._units, sparse_combiner=self._sparse_combiner)
    return config

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    columns = canned_private.deserialize_columns(
        config.pop('feature_columns'), custom_objects=custom_objects)
    return cls(feature_columns=columns, **config)


class LinearModel(tf.keras.Model):
  """A Keras model of one _LinearModelLayer (`layer`) of the same name: the
  linear Estimators' model, also trainable with compile/fit."""

  def __init__(self, feature_columns, units=1, sparse_combiner='sum',
               trainable=True, name=None, **kwargs):
    super().__init__(name=name, **kwargs)
    self.layer = _LinearModelLayer(feature_columns, units, sparse_combiner,
                                   trainable, name=self.name, **kwargs)

  def call(self, features):
    return self.layer(features)

  @property
  def bias(self):
    return self.layer.bias


def _get_expanded_variable_list(var_list):
  """The variables with every partitioned one replaced by its parts."""
  expanded = []
  for variable in var_list:
    if isinstance(variable, (tf.Variable, tf.Tensor)) or (
        canned_private.is_resource_variable(variable)):
      expanded.append(variable)
    else:
      expanded.extend(variable)
  return expanded


def _compute_fraction_of_zero(variables):
  """The fraction of zeros among every element of `variables` (a possibly
  nested list of variables or tensors); NaN when they hold none."""
  with tf.compat.v1.name_scope('zero_fraction'):
    variables = tf.nest.flatten(variables)
    with tf.compat.v1.name_scope('total_size'):
      sizes = [tf.compat.v1.size(v, out_type=tf.int64) for v in variables]
      total_size = tf.math.add_n(sizes)
    with tf.compat.v1.name_scope('total_zero'):

      def zeros_in(variable, size):
        return tf.compat.v1.cond(
            tf.math.equal(size, tf.constant(0, dtype=tf.int64)),
            true_fn=lambda: tf.constant(0, dtype=tf.float32),
            false_fn=lambda: tf.math.zero_fraction(variable) * tf.cast(
                size, tf.float32),
            name='zero_count')

      total_zero = tf.math.add_n(
          [zeros_in(v, size) for v, size in zip(variables, sizes)])
    with tf.compat.v1.name_scope('compute'):
      fraction = total_zero / tf.cast(total_size, tf.float32,
                                      name='float32_size')
    return tf.identity(fraction, name='zero_fraction_or_nan')


def _bias_and_sparsity_summaries(bias_parts, weights, units):
  """The `bias` summary (scalar for one unit) and fraction_of_zero_weights."""
  if units > 1:
    tf.compat.v1.summary.histogram('bias', bias_parts)
  else:
    tf.compat.v1.summary.scalar('bias', bias_parts[0][0])
  tf.compat.v1.summary.scalar('fraction_of_zero_weights',
                              _compute_fraction_of_zero(weights))


def linear_logit_fn_builder(units, feature_columns, sparse_combiner='sum'):
  """tf.compat.v1.estimator.experimental.linear_logit_fn_builder: a
  logit_fn(features) of a linear model named 'linear_model' in the current
  variable scope, over v1 or v2 feature columns."""

  def linear_logit_fn(features):
    if canned_private.is_v2(feature_columns):
      model = LinearModel(feature_columns=feature_columns, units=units,
                          sparse_combiner=sparse_combiner,
                          name='linear_model')
      logits = model(features)
      bias = _get_expanded_variable_list([model.bias])
      weights = [v for v in _get_expanded_variable_list(model.variables)
                 if v not in bias]
      bias = _get_expanded_variable_list([bias])
    else:
      model = canned_private.LinearModelV1(
          feature_columns=feature_columns, units=units,
          sparse_combiner=sparse_combiner, name='linear_model')
      logits = model(features)
      variables = model.cols_to_vars()
      bias = variables.pop('bias')
      weights = _get_expanded_variable_list(variables.values())
    _bias_and_sparsity_summaries(bias, weights, units)
    return logits

  return linear_logit_fn


def _linear_model_fn_builder_v2(units, feature_columns, sparse_combiner='sum',
                                features=None):
  """(logits, trainable variables) of the v2 linear model on `features`."""
  if not canned_private.is_v2(feature_columns):
    raise ValueError(_V1_COLUMNS_IN_V2)
  model = LinearModel(feature_columns=feature_columns, units=units,
                      sparse_combiner=sparse_combiner,
                      name='linear/linear_model')
  logits = model(features)
  weights = [v for v in model.variables if v is not model.bias]
  if units > 1:
    tf.compat.v1.summary.histogram('bias', model.bias)
  else:
    tf.compat.v1.summary.scalar('bias', model.bias[0])
  tf.compat.v1.summary.scalar('fraction_of_zero_weights',
                              _compute_fraction_of_zero(weights))
  return logits, model.variables


def linear_logit_fn_builder_v2(units, feature_columns, sparse_combiner='sum'):
  """A logit_fn(features) of the v2 linear model (v2 columns only)."""

  def linear_logit_fn(features):
    if not canned_private.is_v2(feature_columns):
      raise ValueError(_V1_COLUMNS_IN_V2)
    model = LinearModel(feature_columns=feature_columns, units=units,
                        sparse_combiner=sparse_combiner, name='linear_model')
    logits = model(features)
    bias = _get_expanded_variable_list([model.bias])
    weights = _get_expanded_variable_list(
        [v for v in model.variables if v is not model.bias])
    _bias_and_sparsity_summaries(bias, weights, units)
    return logits

  return linear_logit_fn


# -- SDCA -------------------------------------------------------------------


class LinearSDCA:
  """tf.estimator.experimental.LinearSDCA: Stochastic Dual Coordinate Ascent
  for LinearClassifier (binary) and LinearRegressor (one-dimensional), as
  their `optimizer`. Requires v2 feature columns, sparse_combiner 'sum' and
  a string `example_id_column` feature ([batch] example ids)."""

  def __init__(self, example_id_column, num_loss_partitions=1,
               num_table_shards=None, symmetric_l1_regularization=0.0,
               symmetric_l2_regularization=1.0, adaptive=False):
    self._example_id_column = example_id_column
    self._num_loss_partitions = num_loss_partitions
    self._num_table_shards = num_table_shards
    self._symmetric_l1_regularization = symmetric_l1_regularization
    self._symmetric_l2_regularization = symmetric_l2_regularization
    self._adaptive = adaptive

  def get_train_step(self, state_manager, weight_column_name, loss_type,
                     feature_columns, features, targets, bias_var,
                     global_step):
    """(SDCA model, train op) for one batch of the linear model's columns."""
    model = sdca_ops.model_for_columns(
        state_manager=state_manager, feature_columns=feature_columns,
        features=features, targets=targets, bias_var=bias_var,
        weight_column_name=weight_column_name,
        example_id_column=self._example_id_column,
        options=dict(
            symmetric_l1_regularization=self._symmetric_l1_regularization,
            symmetric_l2_regularization=self._symmetric_l2_regularization,
            adaptive=self._adaptive,
            num_loss_partitions=self._num_loss_partitions,
            num_table_shards=self._num_table_shards, loss_type=loss_type))
    return model, model.minimize(global_step=global_step)


def _sdca_loss_type(head):
  if isinstance(head, (binary_class_head.BinaryClassHead,
                       head_v1._BinaryLogisticHeadWithSigmoidCrossEntropyLoss)):  # pylint: disable=protected-access
    return 'logistic_loss'
  if isinstance(head, (regression_head.RegressionHead,
                       head_v1._RegressionHeadWithMeanSquaredErrorLoss)):  # pylint: disable=protected-access
    if head.logits_dimension != 1:
      raise ValueError('LinearSDCA trains a regression head of one '
                       f'dimension only; this head has {head.logits_dimension}'
                       ' (label_dimension=1, or another optimizer).')
    return 'squared_loss'
  raise ValueError(f'Unsupported head type: {head}')


def _check_sdca_combiner(sparse_combiner):
  if sparse_combiner != 'sum':
    raise ValueError("LinearSDCA combines sparse features by 'sum' only; "
                     f'got sparse_combiner={sparse_combiner!r}.')


def _sdca_model_fn(features, labels, mode, head, feature_columns, optimizer):
  """The spec of a linear model trained by LinearSDCA `optimizer`."""
  if not canned_private.is_v2(feature_columns):
    raise ValueError('LinearSDCA needs feature columns of the '
                     'tf.feature_column (v2) API, not tf.compat.v1 ones.')
  loss_type = _sdca_loss_type(head)
  # v2 heads' models live in the top scope; v1 ones in 'linear' already.
  name = ('linear/linear_model' if isinstance(
      head, (binary_class_head.BinaryClassHead,
             regression_head.RegressionHead)) else 'linear_model')
  model = LinearModel(feature_columns=feature_columns, units=1,
                      sparse_combiner='sum', name=name)
  logits = model(features)
  bias = _get_expanded_variable_list([model.bias])
  weights = [v for v in _get_expanded_variable_list(model.variables) if v not in bias]
  tf.compat.v1.summary.scalar('bias', bias[0][0])
  tf.compat.v1.summary.scalar('fraction_of_zero_weights',
                              _compute_fraction_of_zero(weights))
  if mode != ModeKeys.TRAIN:
    return head.create_estimator_spec(features=features, mode=mode,
                                      labels=labels, logits=logits)
  sdca_model, train_op = optimizer.get_train_step(
      model.layer.state_manager, head._weight_column, loss_type,  # pylint: disable=protected-access
      feature_columns, features, labels, model.bias,
      tf.compat.v1.train.get_global_step())
  spec = head.create_estimator_spec(
      features=features, mode=mode, labels=labels,
      train_op_fn=lambda unused_loss: train_op, logits=logits)
  return spec._replace(training_chief_hooks=(
      tuple(spec.training_chief_hooks) +
      (sdca_ops.UpdateWeightsHook(sdca_model, train_op),)))


# -- model_fns --------------------------------------------------------------


def _check_features(features):
  if not isinstance(features, dict):
    raise ValueError('features should be a dictionary of `Tensor`s. Given '
                     f'type: {type(features)}')


def _default_learning_rate(feature_columns):
  return min(_LEARNING_RATE, 1.0 / math.sqrt(len(feature_columns)))


def _get_default_optimizer(feature_columns):
  return tf.compat.v1.train.FtrlOptimizer(
      learning_rate=_default_learning_rate(feature_columns))


def _get_default_optimizer_v2(feature_columns):
  return tf.keras.optimizers.legacy.Ftrl(
      learning_rate=_default_learning_rate(feature_columns))


def _linear_model_fn_v2(features, labels, mode, head, feature_columns,
                        optimizer, config, sparse_combiner='sum'):
  """The v2 Linear Estimators' model_fn."""
  _check_features(features)
  del config
  if isinstance(optimizer, LinearSDCA):
    _check_sdca_combiner(sparse_combiner)
    return _sdca_model_fn(features, labels, mode, head, feature_columns,
                          optimizer)
  logits, variables = _linear_model_fn_builder_v2(
      units=head.logits_dimension, feature_columns=feature_columns,
      sparse_combiner=sparse_combiner, features=features)
  if mode == ModeKeys.TRAIN:
    optimizer = optimizers.get_optimizer_instance_v2(
        optimizer or _get_default_optimizer_v2(feature_columns),
        learning_rate=_LEARNING_RATE)
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=optimizer,
      trainable_variables=variables, logits=logits)


def _linear_model_fn(features, labels, mode, head, feature_columns, optimizer,
                     partitioner, config, sparse_combiner='sum'):
  """The v1 Linear Estimators' model_fn."""
  _check_features(features)
  ps_tasks = config.num_ps_replicas if config else 0
  partitioner = partitioner or tf.compat.v1.min_max_variable_partitioner(
      max_partitions=ps_tasks, min_slice_size=64 << 20)
  with tf.compat.v1.variable_scope('linear', values=tuple(features.values()),
                                   partitioner=partitioner):
    if isinstance(optimizer, LinearSDCA):
      _check_sdca_combiner(sparse_combiner)
      return _sdca_model_fn(features, labels, mode, head, feature_columns,
                            optimizer)
    logits = linear_logit_fn_builder(
        units=head.logits_dimension, feature_columns=feature_columns,
        sparse_combiner=sparse_combiner)(features=features)
    optimizer = optimizers.get_optimizer_instance(
        optimizer or _get_default_optimizer(feature_columns),
        learning_rate=_LEARNING_RATE)
    return head.create_estimator_spec(features=features, mode=mode,
                                      labels=labels, optimizer=optimizer,
                                      logits=logits)


def _check_sdca(feature_columns, optimizer, sparse_combiner, too_wide,
                too_wide_message):
  """ValueError when LinearSDCA cannot train this model."""
  if not isinstance(optimizer, LinearSDCA):
    return
  if sparse_combiner != 'sum':
    raise ValueError('sparse_combiner must be "sum" when optimizer is a '
                     'LinearSDCA object.')
  if not canned_private.is_v2(feature_columns):
    raise ValueError('V2 feature columns required when optimizer is a '
                     'LinearSDCA object.')
  if too_wide:
    raise ValueError(too_wide_message)


def _validate_linear_sdca_optimizer_for_linear_classifier(
    feature_columns, n_classes, optimizer, sparse_combiner):
  _check_sdca(feature_columns, optimizer, sparse_combiner, n_classes > 2,
              'LinearSDCA cannot be used in a multi-class setting.')


def _validate_linear_sdca_optimizer_for_linear_regressor(
    feature_columns, label_dimension, optimizer, sparse_combiner):
  _check_sdca(feature_columns, optimizer, sparse_combiner,
              label_dimension > 1,
              'LinearSDCA can only be used with one-dimensional label.')


def _v2_model_fn(head, feature_columns, optimizer, sparse_combiner):
  def _model_fn(features, labels, mode, config):
    return _linear_model_fn_v2(
        features=features, labels=labels, mode=mode, head=head,
        feature_columns=tuple(feature_columns or []), optimizer=optimizer,
        config=config, sparse_combiner=sparse_combiner)
  return _model_fn


def _v1_model_fn(head, feature_columns, optimizer, partitioner,
                 sparse_combiner):
  def _model_fn(features, labels, mode, config):
    return _linear_model_fn(
        features=features, labels=labels, mode=mode, head=head,
        feature_columns=tuple(feature_columns or []), optimizer=optimizer,
        partitioner=partitioner, config=config,
        sparse_combiner=sparse_combiner)
  return _model_fn


# -- Estimators -------------------------------------------------------------



class LinearClassifierV2(estimator.EstimatorV2):
  """tf.estimator.LinearClassifier: a linear model of n_classes classes
  (binary: logistic loss; more: softmax cross entropy)."""

  def __init__(self, feature_columns, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None, optimizer='Ftrl',
               config=None, warm_start_from=None,
               loss_reduction=_SUM_OVER_BATCH_SIZE, sparse_combiner='sum'):
    _validate_linear_sdca_optimizer_for_linear_classifier(
        feature_columns, n_classes, optimizer, sparse_combiner)
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(
        model_fn=_v2_model_fn(head, feature_columns, optimizer,
                              sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearClassifier(estimator.Estimator):
  """tf.compat.v1.estimator.LinearClassifier (v1 head, loss SUM)."""

  def __init__(self, feature_columns, model_dir=None, n_classes=2,
               weight_column=None, label_vocabulary=None, optimizer='Ftrl',
               config=None, partitioner=None, warm_start_from=None,
               loss_reduction=_SUM, sparse_combiner='sum'):
    _validate_linear_sdca_optimizer_for_linear_classifier(
        feature_columns, n_classes, optimizer, sparse_combiner)
    head = head_v1._binary_logistic_or_multi_class_head(  # pylint: disable=protected-access
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_v1_model_fn(head, feature_columns, optimizer, partitioner,
                              sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimatorV2(estimator.EstimatorV2):
  """tf.estimator.LinearEstimator: a linear model with the given head."""

  def __init__(self, head, feature_columns, model_dir=None, optimizer='Ftrl',
               config=None, sparse_combiner='sum', warm_start_from=None):
    super().__init__(
        model_fn=_v2_model_fn(head, feature_columns, optimizer,
                              sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimator(estimator.Estimator):
  """tf.compat.v1.estimator.LinearEstimator (a v1 head)."""

  def __init__(self, head, feature_columns, model_dir=None, optimizer='Ftrl',
               config=None, partitioner=None, sparse_combiner='sum',
               warm_start_from=None):
    super().__init__(
        model_fn=_v1_model_fn(head, feature_columns, optimizer, partitioner,
                              sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressorV2(estimator.EstimatorV2):
  """tf.estimator.LinearRegressor: a linear model of label_dimension
  outputs, mean squared error loss."""

  def __init__(self, feature_columns, model_dir=None, label_dimension=1,
               weight_column=None, optimizer='Ftrl', config=None,
               warm_start_from=None, loss_reduction=_SUM_OVER_BATCH_SIZE,
               sparse_combiner='sum'):
    _validate_linear_sdca_optimizer_for_linear_regressor(
        feature_columns, label_dimension, optimizer, sparse_combiner)
    head = regression_head.RegressionHead(
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction)
    super().__init__(
        model_fn=_v2_model_fn(head, feature_columns, optimizer,
                              sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(estimator.Estimator):
  """tf.compat.v1.estimator.LinearRegressor (v1 head, loss SUM)."""

  def __init__(self, feature_columns, model_dir=None, label_dimension=1,
               weight_column=None, optimizer='Ftrl', config=None,
               partitioner=None, warm_start_from=None, loss_reduction=_SUM,
               sparse_combiner='sum'):
    _validate_linear_sdca_optimizer_for_linear_regressor(
        feature_columns, label_dimension, optimizer, sparse_combiner)
    head = head_v1._regression_head(  # pylint: disable=protected-access
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction)
    super().__init__(
        model_fn=_v1_model_fn(head, feature_columns, optimizer, partitioner,
                              sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)
