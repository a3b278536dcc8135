"""tf.estimator.RegressionHead and its generalized linear forms:
PoissonRegressionHead and LogisticRegressionHead."""

import tensorflow as tf

from trainer.compat import facade_private
from trainer.compat import keras_losses
from trainer.facade.head import base_head

_KEYS = base_head.MetricKeys
_PRED = base_head.PredictionKeys


class RegressionHead(base_head.SingleHead):
  """A head for regression, mean squared error by default.

  logits and labels: [D0, ... DN, label_dimension] (labels may omit a last
  dimension of 1). Weights: [D0, ... DN], [D0, ... DN, 1] or
  [D0, ... DN, label_dimension]. loss_fn, if given, returns the unreduced
  loss [D0, ... DN, label_dimension]. inverse_link_fn, if given, maps logits
  to the predicted values (then also predicted as 'logits').
  """

  def __init__(self, label_dimension=1, weight_column=None,
               loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn=None, inverse_link_fn=None, name=None):
    if label_dimension < 1:
      raise ValueError(f'Invalid label_dimension {label_dimension}.')
    base_head.validate_loss_reduction(loss_reduction)
    if loss_fn:
      base_head.validate_loss_fn_args(loss_fn)
    self._logits_dimension = label_dimension
    self._weight_column = weight_column
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._inverse_link_fn = inverse_link_fn
    self._name = name
    self._loss_mean_key = self._summary_key(_KEYS.LOSS_MEAN)
    self._prediction_mean_key = self._summary_key(_KEYS.PREDICTION_MEAN)
    self._label_mean_key = self._summary_key(_KEYS.LABEL_MEAN)
    self._loss_regularization_key = self._summary_key(
        _KEYS.LOSS_REGULARIZATION)

  @property
  def name(self):
    return self._name

  @property
  def logits_dimension(self):
    return self._logits_dimension

  @property
  def loss_reduction(self):
    return self._loss_reduction

  def _processed_labels(self, logits, labels):
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits,
        expected_labels_dimension=self._logits_dimension)
    return tf.cast(labels, dtype=tf.float32)

  def _unweighted_loss_and_weights(self, logits, labels, features):
    """(unreduced loss [D0, ... DN, label_dimension], weights or 1.)."""
    if self._loss_fn:
      loss = base_head.call_loss_fn(
          loss_fn=self._loss_fn, labels=labels, logits=logits,
          features=features, expected_loss_dim=self._logits_dimension)
    else:
      loss = tf.compat.v1.losses.mean_squared_error(
          labels=labels, predictions=logits,
          reduction=tf.compat.v1.losses.Reduction.NONE)
    weights = base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits,
        allow_per_logit_weights=True)
    return loss, weights

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    del mode
    values = (logits, labels, regularization_losses, features)
    with tf.compat.v1.name_scope('losses', values=values):
      logits = base_head.check_logits_final_dim(logits,
                                                self._logits_dimension)
      labels = self._processed_labels(logits, labels)
      loss, weights = self._unweighted_loss_and_weights(logits, labels,
                                                        features)
      training_loss = keras_losses.compute_weighted_loss(
          loss, sample_weight=weights, reduction=self._loss_reduction)
      return base_head.regularized_loss(training_loss, regularization_losses)

  def predictions(self, logits):  # pylint: disable=arguments-differ
    """{'predictions'} (+ 'logits' with an inverse_link_fn)."""
    logits = base_head.check_logits_final_dim(logits, self._logits_dimension)
    with tf.compat.v1.name_scope('predictions', values=(logits,)):
      if self._inverse_link_fn:
        return {_PRED.PREDICTIONS: self._inverse_link_fn(logits),
                _PRED.LOGITS: logits}
      return {_PRED.PREDICTIONS: logits}

  def metrics(self, regularization_losses=None):
    """average_loss, prediction/mean, label/mean (+ regularization_loss)."""
    metrics = tf.keras.metrics
    with tf.compat.v1.name_scope('metrics', values=(regularization_losses,)):
      eval_metrics = {
          self._loss_mean_key: metrics.Mean(name=_KEYS.LOSS_MEAN),
          self._prediction_mean_key: metrics.Mean(
              name=_KEYS.PREDICTION_MEAN),
          self._label_mean_key: metrics.Mean(name=_KEYS.LABEL_MEAN),
      }
      if regularization_losses is not None:
        eval_metrics[self._loss_regularization_key] = metrics.Mean(
            name=_KEYS.LOSS_REGULARIZATION)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    predicted = self.predictions(logits)[_PRED.PREDICTIONS]
    logits = base_head.check_logits_final_dim(logits, self._logits_dimension)
    processed = self._processed_labels(logits, labels)
    loss, weights = self._unweighted_loss_and_weights(logits, processed,
                                                      features)
    eval_metrics[self._loss_mean_key].update_state(
        values=loss, sample_weight=weights)
    # The labels as given (Estimator's label/mean reads them so).
    eval_metrics[self._label_mean_key].update_state(
        values=labels, sample_weight=weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[self._prediction_mean_key], predicted, weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    return eval_metrics

  def _export_outputs(self, predictions):
    regression_output = facade_private.RegressionOutput(
        value=predictions[_PRED.PREDICTIONS])
    return {
        base_head.DEFAULT_SERVING_KEY: regression_output,
        base_head.REGRESS_SERVING_KEY: regression_output,
        base_head.PREDICT_SERVING_KEY: facade_private.PredictOutput(
            predictions),
    }


class PoissonRegressionHead(RegressionHead):
  """Poisson regression: log_poisson_loss of the logits (log rates);
  predictions exp(logits). compute_full_loss adds the Stirling term."""

  def __init__(self, label_dimension=1, weight_column=None,
               loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE,
               compute_full_loss=True, name=None):
    self._compute_full_loss = compute_full_loss
    super().__init__(label_dimension=label_dimension,
                     weight_column=weight_column,
                     loss_reduction=loss_reduction,
                     loss_fn=self._poisson_loss,
                     inverse_link_fn=tf.math.exp, name=name)

  def _poisson_loss(self, labels, logits):
    return tf.nn.log_poisson_loss(
        targets=labels, log_input=logits,
        compute_full_loss=self._compute_full_loss)


class LogisticRegressionHead(RegressionHead):
  """Logistic regression: labels in [0, 1], sigmoid cross entropy;
  predictions sigmoid(logits); no classification metrics."""

  def __init__(self, weight_column=None,
               loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE,
               name=None):
    super().__init__(label_dimension=1, weight_column=weight_column,
                     loss_reduction=loss_reduction,
                     loss_fn=self._logistic_loss,
                     inverse_link_fn=tf.math.sigmoid, name=name)

  def _logistic_loss(self, labels, logits):
    labels = base_head.check_label_range(
        labels, n_classes=2, message='Labels must be in range [0, 1]')
    return tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(
        labels=labels, logits=logits)
