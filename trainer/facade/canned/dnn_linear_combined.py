"""Wide & deep: tf.estimator.DNNLinearCombinedClassifier, ...Regressor,
...Estimator and their v1 forms.

The logits are the sum of a linear model over linear_feature_columns and a
DNN over dnn_feature_columns (either may be absent, not both), each the
variables of canned/linear.py and canned/dnn.py, each trained by its own
optimizer: linear_optimizer (default 'Ftrl', a name at learning rate
min(0.005, 1/sqrt(number of linear columns))) and dnn_optimizer (default
'Adagrad', a name at 0.001). The linear logits log `linear/...`
fraction_of_zero_values and activation summaries. v2: Keras legacy
optimizers (the DNN's, else the linear one's, `iterations` is global_step);
v1: tf.compat.v1.train optimizers (global_step incremented once after both),
variables under the `dnn` and `linear` variable scopes with min-max
partitioners (input_layer_partitioner for the linear part and the DNN's
input layer).
"""

import math

import tensorflow as tf

from trainer.api import specs
from trainer.facade import estimator
from trainer.facade.canned import dnn
from trainer.facade.canned import head as head_v1
from trainer.facade.canned import linear
from trainer.facade.canned import optimizers
from trainer.facade.head import head_utils
from trainer.facade.head import regression_head

ModeKeys = specs.ModeKeys
# Loss reductions: the v2 Estimators' default (a tf.losses.Reduction, as
# their heads take) and the v1 ones'.
_SUM_OVER_BATCH_SIZE = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_SUM = tf.compat.v1.losses.Reduction.SUM

# tensorflow_estimator's learning rates of named optimizers here.
_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005


def _check_no_sync_replicas_optimizer(optimizer):
  if isinstance(optimizer, tf.compat.v1.train.SyncReplicasOptimizer):
    raise ValueError(
        'SyncReplicasOptimizer does not support multi optimizers case. '
        'Therefore, it is not supported in DNNLinearCombined model. If you '
        'want to use this optimizer, please use either DNN or Linear model.')


def _linear_learning_rate(num_linear_feature_columns):
  return min(_LINEAR_LEARNING_RATE,
             1.0 / math.sqrt(num_linear_feature_columns))


def _add_layer_summary(value, tag):
  tf.compat.v1.summary.scalar(f'{tag}/fraction_of_zero_values',
                              tf.math.zero_fraction(value))
  tf.compat.v1.summary.histogram(f'{tag}/activation', value)


def _validate_feature_columns(linear_feature_columns, dnn_feature_columns):
  """Both column lists together; ValueError if both are empty."""
  columns = list(linear_feature_columns or []) + list(
      dnn_feature_columns or [])
  if not columns:
    raise ValueError('Either linear_feature_columns or dnn_feature_columns '
                     'must be defined.')
  return columns


def _check_model_fn_args(features, linear_feature_columns,
                         dnn_feature_columns):
  if not isinstance(features, dict):
    raise ValueError('features should be a dictionary of `Tensor`s. Given '
                     f'type: {type(features)}')
  if not linear_feature_columns and not dnn_feature_columns:
    raise ValueError('Either linear_feature_columns or dnn_feature_columns '
                     'must be defined.')


def _sum_logits(dnn_logits, linear_logits):
  if dnn_logits is not None and linear_logits is not None:
    return dnn_logits + linear_logits
  return dnn_logits if dnn_logits is not None else linear_logits


def _dnn_linear_combined_model_fn_v2(
    features, labels, mode, head, linear_feature_columns=None,
    linear_optimizer='Ftrl', dnn_feature_columns=None,
    dnn_optimizer='Adagrad', dnn_hidden_units=None,
    dnn_activation_fn=tf.nn.relu, dnn_dropout=None, config=None,
    batch_norm=False, linear_sparse_combiner='sum',
    loss_reduction=_SUM_OVER_BATCH_SIZE):
  """The v2 wide & deep Estimators' model_fn."""
  _check_model_fn_args(features, linear_feature_columns, dnn_feature_columns)
  del config
  dnn_logits = linear_logits = None
  if dnn_feature_columns:
    if mode == ModeKeys.TRAIN:
      dnn_optimizer = optimizers.get_optimizer_instance_v2(
          dnn_optimizer, learning_rate=_DNN_LEARNING_RATE)
      _check_no_sync_replicas_optimizer(dnn_optimizer)
    if not dnn_hidden_units:
      raise ValueError('dnn_hidden_units must be defined when '
                       'dnn_feature_columns is specified.')
    dnn_logits, dnn_variables, dnn_update_ops = dnn._dnn_model_fn_builder_v2(  # pylint: disable=protected-access
        units=head.logits_dimension, hidden_units=dnn_hidden_units,
        feature_columns=dnn_feature_columns, activation_fn=dnn_activation_fn,
        dropout=dnn_dropout, batch_norm=batch_norm, features=features,
        mode=mode)
  if linear_feature_columns:
    if mode == ModeKeys.TRAIN:
      linear_optimizer = optimizers.get_optimizer_instance_v2(
          linear_optimizer,
          learning_rate=_linear_learning_rate(len(linear_feature_columns)))
      _check_no_sync_replicas_optimizer(linear_optimizer)
    linear_logits, linear_variables = linear._linear_model_fn_builder_v2(  # pylint: disable=protected-access
        units=head.logits_dimension, feature_columns=linear_feature_columns,
        sparse_combiner=linear_sparse_combiner, features=features)
    _add_layer_summary(linear_logits, 'linear')
  logits = _sum_logits(dnn_logits, linear_logits)

  def _train_op_fn(loss):
    if loss_reduction == _SUM_OVER_BATCH_SIZE:
      replicas = tf.distribute.get_strategy().num_replicas_in_sync
      if replicas > 1:
        loss *= 1. / replicas
    train_ops = []
    if dnn_logits is not None:
      train_ops.extend(dnn_optimizer.get_updates(loss, dnn_variables))
      if dnn_update_ops is not None:
        train_ops.extend(dnn_update_ops)
    if linear_logits is not None:
      train_ops.extend(linear_optimizer.get_updates(loss, linear_variables))
    return tf.group(*train_ops)

  if mode == ModeKeys.TRAIN:
    step_counter = (dnn_optimizer if dnn_logits is not None
                    else linear_optimizer)
    step_counter.iterations = tf.compat.v1.train.get_or_create_global_step()
  return head.create_estimator_spec(features=features, mode=mode,
                                    labels=labels, train_op_fn=_train_op_fn,
                                    logits=logits)


def _dnn_linear_combined_model_fn(
    features, labels, mode, head, linear_feature_columns=None,
    linear_optimizer='Ftrl', dnn_feature_columns=None,
    dnn_optimizer='Adagrad', dnn_hidden_units=None,
    dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
    input_layer_partitioner=None, config=None, batch_norm=False,
    linear_sparse_combiner='sum'):
  """The v1 wide & deep Estimators' model_fn."""
  _check_model_fn_args(features, linear_feature_columns, dnn_feature_columns)
  ps_tasks = config.num_ps_replicas if config else 0
  input_layer_partitioner = input_layer_partitioner or (
      tf.compat.v1.min_max_variable_partitioner(max_partitions=ps_tasks,
                                                min_slice_size=64 << 20))
  dnn_logits = linear_logits = None
  dnn_scope = linear_scope = None
  if dnn_feature_columns:
    dnn_optimizer = optimizers.get_optimizer_instance(
        dnn_optimizer, learning_rate=_DNN_LEARNING_RATE)
    _check_no_sync_replicas_optimizer(dnn_optimizer)
    if not dnn_hidden_units:
      raise ValueError('dnn_hidden_units must be defined when '
                       'dnn_feature_columns is specified.')
    with tf.compat.v1.variable_scope(
        'dnn', values=tuple(features.values()),
        partitioner=tf.compat.v1.min_max_variable_partitioner(
            max_partitions=ps_tasks)) as scope:
      dnn_scope = scope.name
      dnn_logits = dnn.dnn_logit_fn_builder(
          units=head.logits_dimension, hidden_units=dnn_hidden_units,
          feature_columns=dnn_feature_columns,
          activation_fn=dnn_activation_fn, dropout=dnn_dropout,
          batch_norm=batch_norm,
          input_layer_partitioner=input_layer_partitioner)(
              features=features, mode=mode)
  if linear_feature_columns:
    linear_optimizer = optimizers.get_optimizer_instance(
        linear_optimizer,
        learning_rate=_linear_learning_rate(len(linear_feature_columns)))
    _check_no_sync_replicas_optimizer(linear_optimizer)
    with tf.compat.v1.variable_scope(
        'linear', values=tuple(features.values()),
        partitioner=input_layer_partitioner) as scope:
      linear_scope = scope.name
      linear_logits = linear.linear_logit_fn_builder(
          units=head.logits_dimension, feature_columns=linear_feature_columns,
          sparse_combiner=linear_sparse_combiner)(features=features)
      _add_layer_summary(linear_logits, scope.name)
  logits = _sum_logits(dnn_logits, linear_logits)

  def _train_op_fn(loss):
    trainable = tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES
    train_ops = []
    if dnn_logits is not None:
      train_ops.append(dnn_optimizer.minimize(
          loss, var_list=tf.compat.v1.get_collection(trainable,
                                                     scope=dnn_scope)))
    if linear_logits is not None:
      train_ops.append(linear_optimizer.minimize(
          loss, var_list=tf.compat.v1.get_collection(trainable,
                                                     scope=linear_scope)))
    with tf.control_dependencies([tf.group(*train_ops)]):
      return tf.compat.v1.assign_add(
          tf.compat.v1.train.get_global_step(), 1).op

  return head.create_estimator_spec(features=features, mode=mode,
                                    labels=labels, train_op_fn=_train_op_fn,
                                    logits=logits)




def _v2_model_fn(head, linear_feature_columns, linear_optimizer,
                 dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                 dnn_activation_fn, dnn_dropout, batch_norm,
                 linear_sparse_combiner, loss_reduction=_SUM_OVER_BATCH_SIZE):
  def _model_fn(features, labels, mode, config):
    return _dnn_linear_combined_model_fn_v2(
        features=features, labels=labels, mode=mode, head=head,
        linear_feature_columns=linear_feature_columns,
        linear_optimizer=linear_optimizer,
        dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=dnn_hidden_units,
        dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
        config=config, batch_norm=batch_norm,
        linear_sparse_combiner=linear_sparse_combiner,
        loss_reduction=loss_reduction)
  return _model_fn


def _v1_model_fn(head, linear_feature_columns, linear_optimizer,
                 dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                 dnn_activation_fn, dnn_dropout, input_layer_partitioner,
                 batch_norm, linear_sparse_combiner):
  def _model_fn(features, labels, mode, config):
    return _dnn_linear_combined_model_fn(
        features=features, labels=labels, mode=mode, head=head,
        linear_feature_columns=linear_feature_columns,
        linear_optimizer=linear_optimizer,
        dnn_feature_columns=dnn_feature_columns, dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=dnn_hidden_units,
        dnn_activation_fn=dnn_activation_fn, dnn_dropout=dnn_dropout,
        input_layer_partitioner=input_layer_partitioner, config=config,
        batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner)
  return _model_fn


class DNNLinearCombinedClassifierV2(estimator.EstimatorV2):
  """tf.estimator.DNNLinearCombinedClassifier: wide & deep classification."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
               weight_column=None, label_vocabulary=None, config=None,
               warm_start_from=None, loss_reduction=_SUM_OVER_BATCH_SIZE,
               batch_norm=False, linear_sparse_combiner='sum'):
    self._feature_columns = _validate_feature_columns(
        linear_feature_columns, dnn_feature_columns)
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(
        model_fn=_v2_model_fn(
            head, linear_feature_columns, linear_optimizer,
            dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
            dnn_activation_fn, dnn_dropout, batch_norm,
            linear_sparse_combiner, loss_reduction),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(estimator.Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedClassifier (v1 head, SUM)."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, n_classes=2,
               weight_column=None, label_vocabulary=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=_SUM, batch_norm=False,
               linear_sparse_combiner='sum'):
    self._feature_columns = _validate_feature_columns(
        linear_feature_columns, dnn_feature_columns)
    head = head_v1._binary_logistic_or_multi_class_head(  # pylint: disable=protected-access
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_v1_model_fn(
            head, linear_feature_columns, linear_optimizer,
            dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
            dnn_activation_fn, dnn_dropout, input_layer_partitioner,
            batch_norm, linear_sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedEstimatorV2(estimator.EstimatorV2):
  """tf.estimator.DNNLinearCombinedEstimator: wide & deep with a head."""

  def __init__(self, head, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None, config=None,
               batch_norm=False, linear_sparse_combiner='sum'):
    self._feature_columns = _validate_feature_columns(
        linear_feature_columns, dnn_feature_columns)
    super().__init__(
        model_fn=_v2_model_fn(
            head, linear_feature_columns, linear_optimizer,
            dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
            dnn_activation_fn, dnn_dropout, batch_norm,
            linear_sparse_combiner),
        model_dir=model_dir, config=config)


class DNNLinearCombinedEstimator(estimator.Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedEstimator (a v1 head)."""

  def __init__(self, head, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               input_layer_partitioner=None, config=None, batch_norm=False,
               linear_sparse_combiner='sum'):
    self._feature_columns = _validate_feature_columns(
        linear_feature_columns, dnn_feature_columns)
    super().__init__(
        model_fn=_v1_model_fn(
            head, linear_feature_columns, linear_optimizer,
            dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
            dnn_activation_fn, dnn_dropout, input_layer_partitioner,
            batch_norm, linear_sparse_combiner),
        model_dir=model_dir, config=config)


class DNNLinearCombinedRegressorV2(estimator.EstimatorV2):
  """tf.estimator.DNNLinearCombinedRegressor: wide & deep regression."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               label_dimension=1, weight_column=None, config=None,
               warm_start_from=None, loss_reduction=_SUM_OVER_BATCH_SIZE,
               batch_norm=False, linear_sparse_combiner='sum'):
    self._feature_columns = _validate_feature_columns(
        linear_feature_columns, dnn_feature_columns)
    head = regression_head.RegressionHead(
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction)
    # As tensorflow_estimator's, its model_fn divides the loss by the replica
    # count whatever loss_reduction is.
    super().__init__(
        model_fn=_v2_model_fn(
            head, linear_feature_columns, linear_optimizer,
            dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
            dnn_activation_fn, dnn_dropout, batch_norm,
            linear_sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(estimator.Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedRegressor (v1 head, SUM)."""

  def __init__(self, model_dir=None, linear_feature_columns=None,
               linear_optimizer='Ftrl', dnn_feature_columns=None,
               dnn_optimizer='Adagrad', dnn_hidden_units=None,
               dnn_activation_fn=tf.nn.relu, dnn_dropout=None,
               label_dimension=1, weight_column=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=_SUM, batch_norm=False,
               linear_sparse_combiner='sum'):
    self._feature_columns = _validate_feature_columns(
        linear_feature_columns, dnn_feature_columns)
    head = head_v1._regression_head(  # pylint: disable=protected-access
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction)
    super().__init__(
        model_fn=_v1_model_fn(
            head, linear_feature_columns, linear_optimizer,
            dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
            dnn_activation_fn, dnn_dropout, input_layer_partitioner,
            batch_norm, linear_sparse_combiner),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)
