"""tf.estimator.BinaryClassHead: one label in {0, 1}, sigmoid cross entropy."""

import functools

import tensorflow as tf

from trainer.compat import facade_private
from trainer.compat import keras_losses
from trainer.facade.head import base_head

_KEYS = base_head.MetricKeys
_PRED = base_head.PredictionKeys


@functools.lru_cache(maxsize=None)
def _accuracy_baseline_class():
  """The Metric class of accuracy_baseline (made on first use, so tf.keras is
  the Keras the program runs with)."""

  class AccuracyBaseline(tf.keras.metrics.Metric):
    """The accuracy of always predicting the more frequent class: reads the
    weighted label mean's total and count; updating it does nothing."""

    def __init__(self, label_mean, name=_KEYS.ACCURACY_BASELINE):
      super().__init__(name=name)
      # A function, not an attribute Keras would track as a child metric.
      self._label_mean = lambda: label_mean

    def update_state(self, *args, **kwargs):
      del args, kwargs

    def result(self):
      label_mean = self._label_mean()
      total, count = label_mean.total, label_mean.count
      return tf.math.divide_no_nan(tf.math.maximum(total, count - total),
                                   count)

    def reset_state(self):
      pass

  return AccuracyBaseline


def _update_auc(auc_metric, labels, predictions, weights=None):
  predictions = tf.cast(predictions, dtype=tf.float32)
  if weights is not None:
    weights = keras_losses.broadcast_weights(weights, predictions)
  auc_metric.update_state(y_true=labels, y_pred=predictions,
                          sample_weight=weights)


class BinaryClassHead(base_head.SingleHead):
  """A head for binary classification with sigmoid cross entropy.

  logits: [D0, ... DN, 1]; labels of the same shape (or without the last
  dimension): floats in [0, 1], or strings of label_vocabulary (two
  entries). Weights (weight_column): [D0, ... DN] or [D0, ... DN, 1]. The
  loss is the weighted sum of the per-example losses reduced by
  loss_reduction (default: divided by the number of examples). loss_fn,
  if given, takes labels and logits (and features) and returns the
  unreduced loss [D0, ... DN, 1]. thresholds add accuracy, precision and
  recall at each threshold. A name suffixes every metric and summary key
  with '/name'.
  """

  def __init__(self, weight_column=None, thresholds=None,
               label_vocabulary=None,
               loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn=None, name=None):
    if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                       (list, tuple)):
      raise ValueError('label_vocabulary should be a list or a tuple. Given '
                       f'type: {type(label_vocabulary)}')
    thresholds = tuple(thresholds) if thresholds else ()
    for threshold in thresholds:
      if threshold <= 0.0 or threshold >= 1.0:
        raise ValueError(f'thresholds not in (0, 1): {(thresholds,)}.')
    base_head.validate_loss_reduction(loss_reduction)
    if loss_fn:
      base_head.validate_loss_fn_args(loss_fn)
    self._weight_column = weight_column
    self._thresholds = thresholds
    self._label_vocabulary = label_vocabulary
    self._tables = (None if label_vocabulary is None else
                    base_head.VocabularyTables(label_vocabulary))
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name
    key = self._summary_key
    self._loss_mean_key = key(_KEYS.LOSS_MEAN)
    self._accuracy_key = key(_KEYS.ACCURACY)
    self._precision_key = key(_KEYS.PRECISION)
    self._recall_key = key(_KEYS.RECALL)
    self._prediction_mean_key = key(_KEYS.PREDICTION_MEAN)
    self._label_mean_key = key(_KEYS.LABEL_MEAN)
    self._accuracy_baseline_key = key(_KEYS.ACCURACY_BASELINE)
    self._auc_key = key(_KEYS.AUC)
    self._auc_pr_key = key(_KEYS.AUC_PR)
    self._loss_regularization_key = key(_KEYS.LOSS_REGULARIZATION)
    self._threshold_keys = tuple(
        (key(_KEYS.ACCURACY_AT_THRESHOLD % t),
         key(_KEYS.PRECISION_AT_THRESHOLD % t),
         key(_KEYS.RECALL_AT_THRESHOLD % t)) for t in thresholds)

  @property
  def name(self):
    return self._name

  @property
  def logits_dimension(self):
    return 1

  @property
  def loss_reduction(self):
    return self._loss_reduction

  def _processed_labels(self, logits, labels):
    """Labels as float32 in [0, 1] (vocabulary strings looked up)."""
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._tables is not None:
      labels = self._tables.class_ids(labels)
    labels = tf.cast(labels, dtype=tf.float32)
    return base_head.check_label_range(labels, n_classes=2)

  def _unweighted_loss_and_weights(self, logits, labels, features):
    """(unreduced loss [D0, ... DN, 1], example weights or 1.)."""
    if self._loss_fn:
      loss = base_head.call_loss_fn(
          loss_fn=self._loss_fn, labels=labels, logits=logits,
          features=features, expected_loss_dim=1)
    else:
      loss = tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(
          labels=labels, logits=logits)
    weights = base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    return loss, weights

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    del mode
    values = (logits, labels, regularization_losses, features)
    with tf.compat.v1.name_scope('losses', values=values):
      logits = base_head.check_logits_final_dim(logits, 1)
      labels = self._processed_labels(logits, labels)
      loss, weights = self._unweighted_loss_and_weights(
          logits, labels, features)
      training_loss = keras_losses.compute_weighted_loss(
          loss, sample_weight=weights, reduction=self._loss_reduction)
      return base_head.regularized_loss(training_loss, regularization_losses)

  def predictions(self, logits, keys=None):
    """logits, logistic, probabilities, class_ids, classes, all_class_ids,
    all_classes (or those of `keys`)."""
    keys = base_head.prediction_keys_to_make(keys, [
        _PRED.LOGITS, _PRED.LOGISTIC, _PRED.PROBABILITIES, _PRED.CLASS_IDS,
        _PRED.CLASSES, _PRED.ALL_CLASS_IDS, _PRED.ALL_CLASSES])
    logits = base_head.check_logits_final_dim(logits, 1)
    predictions = {}
    with tf.compat.v1.name_scope('predictions', values=(logits,)):
      if _PRED.LOGITS in keys:
        predictions[_PRED.LOGITS] = logits
      if _PRED.LOGISTIC in keys:
        predictions[_PRED.LOGISTIC] = tf.math.sigmoid(logits,
                                                      name=_PRED.LOGISTIC)
      two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1,
                                   name='two_class_logits')
      if _PRED.PROBABILITIES in keys:
        predictions[_PRED.PROBABILITIES] = tf.nn.softmax(
            two_class_logits, name=_PRED.PROBABILITIES)
      if _PRED.CLASS_IDS in keys or _PRED.CLASSES in keys:
        class_ids = tf.expand_dims(
            tf.math.argmax(two_class_logits, axis=-1, name=_PRED.CLASS_IDS),
            axis=-1)
        if _PRED.CLASS_IDS in keys:
          predictions[_PRED.CLASS_IDS] = class_ids
        if _PRED.CLASSES in keys:
          if self._tables is not None:
            classes = self._tables.class_names(class_ids)
          else:
            classes = tf.strings.as_string(class_ids, name='str_classes')
          predictions[_PRED.CLASSES] = classes
      if _PRED.ALL_CLASS_IDS in keys:
        predictions[_PRED.ALL_CLASS_IDS] = base_head.all_class_ids(
            logits, n_classes=2)
      if _PRED.ALL_CLASSES in keys:
        predictions[_PRED.ALL_CLASSES] = base_head.all_classes(
            logits, n_classes=2, label_vocabulary=self._label_vocabulary)
    return predictions

  def metrics(self, regularization_losses=None):
    """average_loss, accuracy, precision, recall, prediction/mean,
    label/mean, accuracy_baseline, auc, auc_precision_recall (+
    regularization_loss, + the threshold metrics)."""
    metrics = tf.keras.metrics
    with tf.compat.v1.name_scope('metrics', values=(regularization_losses,)):
      label_mean = metrics.Mean(name=_KEYS.LABEL_MEAN)
      eval_metrics = {
          self._loss_mean_key: metrics.Mean(name=_KEYS.LOSS_MEAN),
          self._accuracy_key: metrics.Accuracy(name=_KEYS.ACCURACY),
          self._precision_key: metrics.Precision(name=_KEYS.PRECISION),
          self._recall_key: metrics.Recall(name=_KEYS.RECALL),
          self._prediction_mean_key: metrics.Mean(
              name=_KEYS.PREDICTION_MEAN),
          self._label_mean_key: label_mean,
          self._accuracy_baseline_key: _accuracy_baseline_class()(label_mean),
          self._auc_key: metrics.AUC(name=_KEYS.AUC),
          self._auc_pr_key: metrics.AUC(curve='PR', name=_KEYS.AUC_PR),
      }
      if regularization_losses is not None:
        eval_metrics[self._loss_regularization_key] = metrics.Mean(
            name=_KEYS.LOSS_REGULARIZATION)
      for threshold, (accuracy, precision, recall) in zip(
          self._thresholds, self._threshold_keys):
        eval_metrics[accuracy] = metrics.BinaryAccuracy(
            name=accuracy, threshold=threshold)
        eval_metrics[precision] = metrics.Precision(
            name=precision, thresholds=threshold)
        eval_metrics[recall] = metrics.Recall(name=recall,
                                              thresholds=threshold)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    class_ids = self.predictions(logits)[_PRED.CLASS_IDS]
    logits = base_head.check_logits_final_dim(logits, 1)
    labels = self._processed_labels(logits, labels)
    loss, weights = self._unweighted_loss_and_weights(logits, labels,
                                                      features)
    eval_metrics[self._loss_mean_key].update_state(
        values=loss, sample_weight=weights)
    for key in (self._accuracy_key, self._precision_key, self._recall_key):
      eval_metrics[key].update_state(
          y_true=labels, y_pred=class_ids, sample_weight=weights)
    logistic = self.predictions(logits, [_PRED.LOGISTIC])[_PRED.LOGISTIC]
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[self._prediction_mean_key], logistic, weights)
    base_head.update_metric_with_broadcast_weights(
        eval_metrics[self._label_mean_key], labels, weights)
    eval_metrics[self._accuracy_baseline_key].update_state()
    for key in (self._auc_key, self._auc_pr_key):
      _update_auc(eval_metrics[key], labels, logistic, weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    for keys in self._threshold_keys:
      for key in keys:
        eval_metrics[key].update_state(
            y_true=labels, y_pred=logistic, sample_weight=weights)
    return eval_metrics

  def _export_outputs(self, predictions):
    classifier_output = base_head.classification_output(
        scores=predictions[_PRED.PROBABILITIES], n_classes=2,
        label_vocabulary=self._label_vocabulary)
    return {
        base_head.DEFAULT_SERVING_KEY: classifier_output,
        base_head.CLASSIFY_SERVING_KEY: classifier_output,
        base_head.REGRESS_SERVING_KEY: facade_private.RegressionOutput(
            value=predictions[_PRED.LOGISTIC]),
        base_head.PREDICT_SERVING_KEY: facade_private.PredictOutput(
            predictions),
    }
