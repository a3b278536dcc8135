"""Baseline Estimators: tf.estimator.BaselineClassifier, BaselineRegressor,
BaselineEstimator and their v1 forms.

They ignore the feature values and learn one bias per logit, `baseline/bias`
([logits_dimension], zeros): the logits are the bias repeated over the batch,
whose size is the first dimension of the features (asserted equal across
them, the weight column excepted). Optimizer: 'Ftrl' by default; a name gets
learning rate 0.3. v2: a Keras legacy optimizer whose `iterations` is
global_step, loss reduced SUM_OVER_BATCH_SIZE (divided by the replica count
under a strategy); v1: a tf.compat.v1.train optimizer, v1 heads, loss SUM.
"""

import tensorflow as tf

from trainer.api import specs
from trainer.compat import canned as canned_private
from trainer.facade import estimator
from trainer.facade.canned import head as head_v1
from trainer.facade.canned import optimizers
from trainer.facade.head import head_utils
from trainer.facade.head import regression_head

ModeKeys = specs.ModeKeys
# Loss reductions: the v2 Estimators' default (a tf.losses.Reduction, as
# their heads take) and the v1 ones'.
_SUM_OVER_BATCH_SIZE = tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE
_SUM = tf.compat.v1.losses.Reduction.SUM

# tensorflow_estimator's learning rate of a baseline's named optimizer.
_LEARNING_RATE = 0.3


def _weight_key(weight_column, numeric_class, class_name):
  """The features key of the weight column (None without one)."""
  if weight_column is None or isinstance(weight_column, str):
    return weight_column
  if not isinstance(weight_column, numeric_class):
    raise TypeError(f'Weight column must be either a string or {class_name}.'
                    f' Given type: {type(weight_column)}.')
  return weight_column.key


def _get_weight_column_key(weight_column):
  return _weight_key(weight_column, canned_private.NumericColumnV1,
                     '_NumericColumn')


def _get_weight_column_key_v2(weight_column):
  return _weight_key(weight_column, canned_private.NumericColumn,
                     'NumericColumn')


def _get_batch_size_and_size_checks(features, weight_column_key):
  """(assertions that every feature but the weight has the batch size of
  the first, that batch size)."""
  checks, batch_size = [], None
  for key, feature in features.items():
    if key == weight_column_key:
      continue  # Serving would otherwise need the weight.
    first = tf.compat.v1.shape(feature)[0]
    if batch_size is None:
      batch_size = first
    else:
      checks.append(tf.compat.v1.debugging.assert_equal(batch_size, first))
  return checks, batch_size


def _baseline_logit_fn_builder(num_outputs, weight_column=None):
  """A logit_fn(features) of the v1 baseline: get_variable('bias') in
  variable_scope('baseline')."""

  def baseline_logit_fn(features):
    checks, batch_size = _get_batch_size_and_size_checks(
        features, _get_weight_column_key(weight_column))
    with tf.control_dependencies(checks):
      with tf.compat.v1.variable_scope('baseline'):
        bias = tf.compat.v1.get_variable(
            'bias', shape=[num_outputs],
            initializer=tf.compat.v1.initializers.zeros)
        return tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))

  return baseline_logit_fn


def _baseline_model_fn(features, labels, mode, head, optimizer,
                       weight_column=None, config=None):
  """The v1 Baseline Estimators' model_fn."""
  del config
  logits = _baseline_logit_fn_builder(head.logits_dimension,
                                      weight_column)(features)

  def train_op_fn(loss):
    opt = optimizers.get_optimizer_instance(optimizer,
                                            learning_rate=_LEARNING_RATE)
    return opt.minimize(loss,
                        global_step=tf.compat.v1.train.get_global_step())

  return head.create_estimator_spec(features=features, mode=mode,
                                    logits=logits, labels=labels,
                                    train_op_fn=train_op_fn)


def _baseline_model_fn_builder_v2(features, num_outputs, weight_column=None):
  """([bias], logits) of the v2 baseline: a tf.Variable `baseline/bias`."""
  checks, batch_size = _get_batch_size_and_size_checks(
      features, _get_weight_column_key_v2(weight_column))
  with tf.control_dependencies(checks):
    with tf.compat.v1.name_scope('baseline'):
      bias = tf.Variable(initial_value=tf.zeros([num_outputs]), name='bias')
      logits = tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))
  return [bias], logits


def _baseline_model_fn_v2(
    features, labels, mode, head, optimizer, weight_column=None, config=None,
    loss_reduction=_SUM_OVER_BATCH_SIZE):
  """The v2 Baseline Estimators' model_fn."""
  del config
  variables, logits = _baseline_model_fn_builder_v2(
      features, head.logits_dimension, weight_column)
  opt = None
  if mode == ModeKeys.TRAIN:
    opt = optimizers.get_optimizer_instance_v2(optimizer,
                                               learning_rate=_LEARNING_RATE)
    opt.iterations = tf.compat.v1.train.get_or_create_global_step()

  def train_op_fn(loss):
    if loss_reduction == _SUM_OVER_BATCH_SIZE:
      replicas = tf.distribute.get_strategy().num_replicas_in_sync
      if replicas > 1:
        loss *= 1. / replicas
    return opt.get_updates(loss, variables)[0]

  return head.create_estimator_spec(features=features, mode=mode,
                                    logits=logits, labels=labels,
                                    train_op_fn=train_op_fn)




class BaselineClassifierV2(estimator.EstimatorV2):
  """tf.estimator.BaselineClassifier: predicts the label distribution seen
  in training, whatever the features."""

  def __init__(self, model_dir=None, n_classes=2, weight_column=None,
               label_vocabulary=None, optimizer='Ftrl', config=None,
               loss_reduction=_SUM_OVER_BATCH_SIZE):
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)

    def _model_fn(features, labels, mode, config):
      return _baseline_model_fn_v2(
          features=features, labels=labels, mode=mode, head=head,
          optimizer=optimizer, weight_column=weight_column, config=config,
          loss_reduction=loss_reduction)

    super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)


class BaselineClassifier(estimator.Estimator):
  """tf.compat.v1.estimator.BaselineClassifier (v1 head, loss SUM)."""

  def __init__(self, model_dir=None, n_classes=2, weight_column=None,
               label_vocabulary=None, optimizer='Ftrl', config=None,
               loss_reduction=_SUM):
    head = head_v1._binary_logistic_or_multi_class_head(  # pylint: disable=protected-access
        n_classes, weight_column, label_vocabulary, loss_reduction)

    def _model_fn(features, labels, mode, config):
      return _baseline_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          optimizer=optimizer, weight_column=weight_column, config=config)

    super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)


class BaselineEstimatorV2(estimator.EstimatorV2):
  """tf.estimator.BaselineEstimator: a baseline with the given head."""

  def __init__(self, head, model_dir=None, optimizer='Ftrl', config=None):

    def _model_fn(features, labels, mode, config):
      return _baseline_model_fn_v2(
          features=features, labels=labels, mode=mode, head=head,
          optimizer=optimizer, config=config)

    super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)


class BaselineEstimator(estimator.Estimator):
  """tf.compat.v1.estimator.BaselineEstimator (a v1 head)."""

  def __init__(self, head, model_dir=None, optimizer='Ftrl', config=None):

    def _model_fn(features, labels, mode, config):
      return _baseline_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          optimizer=optimizer, config=config)

    super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)


class BaselineRegressorV2(estimator.EstimatorV2):
  """tf.estimator.BaselineRegressor: predicts the mean label seen in
  training."""

  def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
               optimizer='Ftrl', config=None,
               loss_reduction=_SUM_OVER_BATCH_SIZE):
    head = regression_head.RegressionHead(
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction)

    def _model_fn(features, labels, mode, config):
      return _baseline_model_fn_v2(
          features=features, labels=labels, mode=mode, head=head,
          optimizer=optimizer, config=config)

    super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)


class BaselineRegressor(estimator.Estimator):
  """tf.compat.v1.estimator.BaselineRegressor (v1 head, loss SUM)."""

  def __init__(self, model_dir=None, label_dimension=1, weight_column=None,
               optimizer='Ftrl', config=None, loss_reduction=_SUM):
    head = head_v1._regression_head(  # pylint: disable=protected-access
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction)

    def _model_fn(features, labels, mode, config):
      return _baseline_model_fn(
          features=features, labels=labels, mode=mode, head=head,
          optimizer=optimizer, config=config)

    super().__init__(model_fn=_model_fn, model_dir=model_dir, config=config)
