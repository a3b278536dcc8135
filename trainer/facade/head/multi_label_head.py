"""tf.estimator.MultiLabelHead: any subset of n_classes labels, sigmoid cross
entropy per class."""

import tensorflow as tf

from trainer.compat import facade_private
from trainer.compat import keras_losses
from trainer.facade.head import base_head

_KEYS = base_head.MetricKeys
_PRED = base_head.PredictionKeys


class MultiLabelHead(base_head.SingleHead):
  """A head for multi-label classification.

  logits: [D0, ... DN, n_classes]. Labels: a multi-hot Tensor of the same
  shape, or a SparseTensor of class ids (or of label_vocabulary strings),
  dense shape [D0, ... DN, ?]. The unreduced loss of an example is the mean
  sigmoid cross entropy over its classes. thresholds add accuracy,
  precision and recall at each threshold; classes_for_class_based_metrics
  (ids, or names of label_vocabulary) add per-class probability mean, AUC
  and AUC-PR.
  """

  def __init__(self, n_classes, weight_column=None, thresholds=None,
               label_vocabulary=None,
               loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn=None, classes_for_class_based_metrics=None, name=None):
    if n_classes is None or n_classes < 2:
      raise ValueError('n_classes must be > 1 for multi-label '
                       f'classification. Given: {n_classes}')
    thresholds = tuple(thresholds) if thresholds else ()
    for threshold in thresholds:
      if threshold <= 0.0 or threshold >= 1.0:
        raise ValueError(
            f'thresholds must be in (0, 1) range. Given: {threshold}')
    if label_vocabulary is not None:
      if not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError('label_vocabulary must be a list or tuple. Given '
                         f'type: {type(label_vocabulary)}')
      if len(label_vocabulary) != n_classes:
        raise ValueError('Length of label_vocabulary must be n_classes '
                         f'({n_classes}). Given: {len(label_vocabulary)}')
    if loss_fn:
      base_head.validate_loss_fn_args(loss_fn)
    base_head.validate_loss_reduction(loss_reduction)
    class_ids = self._class_ids_for_metrics(
        classes_for_class_based_metrics, n_classes, label_vocabulary)
    self._n_classes = n_classes
    self._weight_column = weight_column
    self._thresholds = thresholds
    self._label_vocabulary = label_vocabulary
    self._tables = (None if label_vocabulary is None else
                    base_head.VocabularyTables(label_vocabulary))
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._classes_for_class_based_metrics = class_ids
    self._name = name
    key = self._summary_key
    self._loss_mean_key = key(_KEYS.LOSS_MEAN)
    self._auc_key = key(_KEYS.AUC)
    self._auc_pr_key = key(_KEYS.AUC_PR)
    self._loss_regularization_key = key(_KEYS.LOSS_REGULARIZATION)
    self._threshold_keys = tuple(
        (key(_KEYS.ACCURACY_AT_THRESHOLD % t),
         key(_KEYS.PRECISION_AT_THRESHOLD % t),
         key(_KEYS.RECALL_AT_THRESHOLD % t)) for t in thresholds)
    self._class_keys = tuple(self._keys_of_class(c) for c in class_ids)

  @staticmethod
  def _class_ids_for_metrics(classes, n_classes, label_vocabulary):
    """classes_for_class_based_metrics as a tuple of class ids."""
    if not classes:
      return ()
    classes = tuple(classes)
    if isinstance(classes[0], str):
      if not label_vocabulary:
        raise ValueError('label_vocabulary must be provided when '
                         'classes_for_class_based_metrics are strings.')
      return tuple(label_vocabulary.index(c) for c in classes)
    for class_id in classes:
      if class_id < 0 or class_id >= n_classes:
        raise ValueError(
            'All classes_for_class_based_metrics must be in range '
            f'[0, {n_classes - 1}]. Given: {class_id}')
    return classes

  def _keys_of_class(self, class_id):
    """(probability mean, auc, auc_pr) keys of one class."""
    if self._label_vocabulary is None:
      formats, value = (_KEYS.PROBABILITY_MEAN_AT_CLASS, _KEYS.AUC_AT_CLASS,
                        _KEYS.AUC_PR_AT_CLASS), class_id
    else:
      formats, value = (_KEYS.PROBABILITY_MEAN_AT_NAME, _KEYS.AUC_AT_NAME,
                        _KEYS.AUC_PR_AT_NAME), self._label_vocabulary[class_id]
    return tuple(self._summary_key(f % value) for f in formats)

  @property
  def name(self):
    return self._name

  @property
  def logits_dimension(self):
    return self._n_classes

  @property
  def loss_reduction(self):
    return self._loss_reduction

  def _sparse_labels_to_multi_hot(self, labels):
    if labels.dtype == tf.string:
      ids = tf.sparse.SparseTensor(
          indices=labels.indices,
          values=self._tables.class_ids(labels.values),
          dense_shape=labels.dense_shape)
      return tf.sparse.to_indicator(ids, self._n_classes)
    if not labels.values.dtype.is_integer:
      raise ValueError('Labels dtype should be integer. Instead got '
                       f'{labels.values.dtype}.')
    checked = base_head.check_label_range(
        labels.values, self._n_classes,
        message=('labels must be an integer SparseTensor with values in '
                 f'[0, {self._n_classes})'))
    if tf.executing_eagerly():
      return tf.sparse.to_indicator(labels, self._n_classes)
    with tf.control_dependencies([checked]):
      return tf.sparse.to_indicator(labels, self._n_classes)

  def _processed_labels(self, logits, labels):
    """Labels as a multi-hot int Tensor [D0, ... DN, n_classes]."""
    base_head.check_labels_given(labels)
    if isinstance(labels, tf.sparse.SparseTensor):
      processed = tf.cast(self._sparse_labels_to_multi_hot(labels), tf.int64)
    else:
      processed = base_head.check_label_range(
          labels, 2, message=('labels must be an integer indicator Tensor '
                              'with values in [0, 1]'))
    return base_head.check_dense_labels_match_logits_and_reshape(
        labels=processed, logits=logits,
        expected_labels_dimension=self._n_classes)

  def _unweighted_loss_and_weights(self, logits, processed_labels, features):
    """(unreduced loss [D0, ... DN, 1], example weights or 1.)."""
    if self._loss_fn:
      loss = base_head.call_loss_fn(
          loss_fn=self._loss_fn, labels=processed_labels, logits=logits,
          features=features, expected_loss_dim=1)
    else:
      loss = tf.math.reduce_mean(
          tf.compat.v1.losses.sigmoid_cross_entropy(
              multi_class_labels=processed_labels, logits=logits,
              reduction=tf.compat.v1.losses.Reduction.NONE),
          axis=-1, keepdims=True)
    weights = base_head.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    return loss, weights

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    del mode
    values = (logits, labels, regularization_losses, features)
    with tf.compat.v1.name_scope('losses', values=values):
      logits = base_head.check_logits_final_dim(logits, self._n_classes)
      processed = self._processed_labels(logits, labels)
      loss, weights = self._unweighted_loss_and_weights(logits, processed,
                                                        features)
      training_loss = keras_losses.compute_weighted_loss(
          loss, sample_weight=weights, reduction=self._loss_reduction)
      return base_head.regularized_loss(training_loss, regularization_losses)

  def predictions(self, logits, keys=None):
    """logits, probabilities (sigmoid), classes (every class name)."""
    keys = base_head.prediction_keys_to_make(
        keys, [_PRED.LOGITS, _PRED.PROBABILITIES, _PRED.CLASSES])
    logits = base_head.check_logits_final_dim(logits, self._n_classes)
    predictions = {}
    with tf.compat.v1.name_scope('predictions', values=(logits,)):
      if _PRED.LOGITS in keys:
        predictions[_PRED.LOGITS] = logits
      if _PRED.PROBABILITIES in keys:
        predictions[_PRED.PROBABILITIES] = tf.math.sigmoid(
            logits, name=_PRED.PROBABILITIES)
      if _PRED.CLASSES in keys:
        predictions[_PRED.CLASSES] = base_head.all_classes(
            logits, self._n_classes, self._label_vocabulary)
    return predictions

  def metrics(self, regularization_losses=None):
    """average_loss, auc, auc_precision_recall (+ regularization_loss, the
    threshold metrics, the per-class metrics)."""
    metrics = tf.keras.metrics
    with tf.compat.v1.name_scope(None, 'metrics', (regularization_losses,)):
      eval_metrics = {
          self._loss_mean_key: metrics.Mean(name=_KEYS.LOSS_MEAN),
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
      for probability, auc, auc_pr in self._class_keys:
        eval_metrics[probability] = metrics.Mean(name=probability)
        eval_metrics[auc] = metrics.AUC(name=auc)
        eval_metrics[auc_pr] = metrics.AUC(curve='PR', name=auc_pr)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    logits = base_head.check_logits_final_dim(logits, self._n_classes)
    processed = self._processed_labels(logits, labels)
    loss, weights = self._unweighted_loss_and_weights(logits, processed,
                                                      features)
    probabilities = self.predictions(
        logits, [_PRED.PROBABILITIES])[_PRED.PROBABILITIES]
    eval_metrics[self._loss_mean_key].update_state(
        values=loss, sample_weight=weights)
    for key in (self._auc_key, self._auc_pr_key):
      eval_metrics[key].update_state(
          y_true=processed, y_pred=probabilities, sample_weight=weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    for keys in self._threshold_keys:
      for key in keys:
        eval_metrics[key].update_state(
            y_true=processed, y_pred=probabilities, sample_weight=weights)
    for class_id, (probability, auc, auc_pr) in zip(
        self._classes_for_class_based_metrics, self._class_keys):
      batch_rank = tf.rank(probabilities) - 1
      begin = tf.concat([tf.zeros([batch_rank], dtype=tf.int32), [class_id]],
                        axis=0)
      size = tf.concat([-1 * tf.ones([batch_rank], dtype=tf.int32), [1]],
                       axis=0)
      class_probabilities = tf.slice(probabilities, begin=begin, size=size)
      class_labels = tf.slice(processed, begin=begin, size=size)
      base_head.update_metric_with_broadcast_weights(
          eval_metrics[probability], class_probabilities, weights)
      for key in (auc, auc_pr):
        eval_metrics[key].update_state(
            y_true=class_labels, y_pred=class_probabilities,
            sample_weight=weights)
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
