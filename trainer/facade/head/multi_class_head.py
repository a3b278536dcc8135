"""tf.estimator.MultiClassHead: one of n_classes > 2 classes, softmax cross
entropy."""

import tensorflow as tf

from trainer.compat import facade_private
from trainer.compat import keras_losses
from trainer.facade.head import base_head

_KEYS = base_head.MetricKeys
_PRED = base_head.PredictionKeys


class MultiClassHead(base_head.SingleHead):
  """A head for multi-class classification with softmax cross entropy.

  logits: [D0, ... DN, n_classes]; labels [D0, ... DN, 1] (or without the
  last dimension): integer class ids in [0, n_classes), or strings of
  label_vocabulary (n_classes entries). Weights: [D0, ... DN] or
  [D0, ... DN, 1]. loss_fn, if given, takes labels (class ids) and logits
  (and features) and returns the unreduced loss [D0, ... DN, 1].
  """

  def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
               loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn=None, name=None):
    if n_classes is None:
      raise ValueError('n_classes cannot be None')
    if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                       (list, tuple)):
      raise ValueError('label_vocabulary should be a list or a tuple. Given '
                       f'type: {type(label_vocabulary)}')
    if label_vocabulary is not None and len(label_vocabulary) != n_classes:
      raise ValueError(
          '"label_vocabulary" does not have "n_classes" items. '
          f'len(label_vocabulary)={len(label_vocabulary)}, '
          f'n_classes={n_classes}, label_vocabulary={label_vocabulary}')
    base_head.validate_loss_reduction(loss_reduction)
    if loss_fn:
      base_head.validate_loss_fn_args(loss_fn)
    self._n_classes = base_head.validate_n_classes(n_classes)
    self._weight_column = weight_column
    self._label_vocabulary = label_vocabulary
    self._tables = (None if label_vocabulary is None else
                    base_head.VocabularyTables(label_vocabulary))
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name
    self._loss_mean_key = self._summary_key(_KEYS.LOSS_MEAN)
    self._accuracy_key = self._summary_key(_KEYS.ACCURACY)
    self._loss_regularization_key = self._summary_key(
        _KEYS.LOSS_REGULARIZATION)

  @property
  def name(self):
    return self._name

  @property
  def logits_dimension(self):
    return self._n_classes

  @property
  def loss_reduction(self):
    return self._loss_reduction

  def _processed_labels(self, logits, labels):
    """Labels as class ids in [0, n_classes) (vocabulary looked up)."""
    labels = base_head.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._tables is None:
      if not labels.dtype.is_integer:
        raise ValueError(
            f'Labels dtype should be integer. Instead got {labels.dtype}.')
      label_ids = labels
    else:
      if labels.dtype != tf.string:
        raise ValueError('Labels dtype should be string if there is a '
                         f'vocabulary. Instead got {labels.dtype}')
      label_ids = self._tables.class_ids(labels)
    return base_head.check_label_range(label_ids, self._n_classes)

  def _unweighted_loss_and_weights(self, logits, label_ids, features):
    """(unreduced loss [D0, ... DN, 1], example weights or 1.)."""
    if self._loss_fn:
      loss = base_head.call_loss_fn(
          loss_fn=self._loss_fn, labels=label_ids, logits=logits,
          features=features, expected_loss_dim=1)
    else:
      loss = tf.expand_dims(
          tf.compat.v1.losses.sparse_softmax_cross_entropy(
              labels=label_ids, logits=logits,
              reduction=tf.compat.v1.losses.Reduction.NONE), axis=-1)
    weights = base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    return loss, weights

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    del mode
    values = (logits, labels, regularization_losses, features)
    with tf.compat.v1.name_scope('losses', values=values):
      logits = base_head.check_logits_final_dim(logits, self._n_classes)
      label_ids = self._processed_labels(logits, labels)
      loss, weights = self._unweighted_loss_and_weights(
          logits, label_ids, features)
      training_loss = keras_losses.compute_weighted_loss(
          loss, sample_weight=weights, reduction=self._loss_reduction)
      return base_head.regularized_loss(training_loss, regularization_losses)

  def predictions(self, logits, keys=None):
    """logits, probabilities, class_ids, classes, all_class_ids,
    all_classes (or those of `keys`)."""
    keys = base_head.prediction_keys_to_make(keys, [
        _PRED.LOGITS, _PRED.PROBABILITIES, _PRED.CLASS_IDS, _PRED.CLASSES,
        _PRED.ALL_CLASS_IDS, _PRED.ALL_CLASSES])
    logits = base_head.check_logits_final_dim(logits, self._n_classes)
    predictions = {}
    with tf.compat.v1.name_scope('predictions', values=(logits,)):
      if _PRED.LOGITS in keys:
        predictions[_PRED.LOGITS] = logits
      if _PRED.PROBABILITIES in keys:
        predictions[_PRED.PROBABILITIES] = tf.nn.softmax(
            logits, name=_PRED.PROBABILITIES)
      if _PRED.CLASS_IDS in keys or _PRED.CLASSES in keys:
        class_ids = tf.expand_dims(
            tf.math.argmax(logits, axis=-1, name=_PRED.CLASS_IDS), axis=-1)
        if _PRED.CLASS_IDS in keys:
          predictions[_PRED.CLASS_IDS] = class_ids
        if _PRED.CLASSES in keys:
          if self._label_vocabulary:
            classes = self._tables.class_names(class_ids)
          else:
            classes = tf.strings.as_string(class_ids, name='str_classes')
          predictions[_PRED.CLASSES] = classes
      if _PRED.ALL_CLASS_IDS in keys:
        predictions[_PRED.ALL_CLASS_IDS] = base_head.all_class_ids(
            logits, n_classes=self._n_classes)
      if _PRED.ALL_CLASSES in keys:
        predictions[_PRED.ALL_CLASSES] = base_head.all_classes(
            logits, n_classes=self._n_classes,
            label_vocabulary=self._label_vocabulary)
    return predictions

  def metrics(self, regularization_losses=None):
    """average_loss, accuracy (+ regularization_loss)."""
    metrics = tf.keras.metrics
    with tf.compat.v1.name_scope('metrics', values=(regularization_losses,)):
      eval_metrics = {self._loss_mean_key: metrics.Mean(name=_KEYS.LOSS_MEAN)}
      if regularization_losses is not None:
        eval_metrics[self._loss_regularization_key] = metrics.Mean(
            name=_KEYS.LOSS_REGULARIZATION)
      eval_metrics[self._accuracy_key] = metrics.Accuracy(
          name=_KEYS.ACCURACY)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    class_ids = self.predictions(logits)[_PRED.CLASS_IDS]
    logits = base_head.check_logits_final_dim(logits, self._n_classes)
    label_ids = self._processed_labels(logits, labels)
    loss, weights = self._unweighted_loss_and_weights(logits, label_ids,
                                                      features)
    eval_metrics[self._loss_mean_key].update_state(
        values=loss, sample_weight=weights)
    eval_metrics[self._accuracy_key].update_state(
        y_true=label_ids, y_pred=class_ids, sample_weight=weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    return eval_metrics

  def _export_outputs(self, predictions):
    classifier_output = base_head.classification_output(
        scores=predictions[_PRED.PROBABILITIES], n_classes=self._n_classes,
        label_vocabulary=self._label_vocabulary)
    return {
        base_head.DEFAULT_SERVING_KEY: classifier_output,
        base_head.CLASSIFY_SERVING_KEY: classifier_output,
        base_head.PREDICT_SERVING_KEY: facade_private.PredictOutput(
            predictions),
    }
