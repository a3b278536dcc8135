"""The v1 heads the tf.compat.v1.estimator canned Estimators build
(tensorflow_estimator's canned/head.py, private to them): `_Head` and the
binary, multi-class and regression heads with their constructor functions.

Unlike tf.estimator's v2 heads (trainer/facade/head), they run in a TF1
graph only: losses through tf.compat.v1.losses (default reduction SUM),
metrics as tf.compat.v1.metrics (value, update_op) pairs, training with a
v1 optimizer's minimize(loss, global_step) (or train_op_fn) grouped with
the UPDATE_OPS collection, and TRAIN summaries of the loss, the average loss
(for a SUM reduction) and the regularization loss. Shapes, messages,
metric keys, prediction keys and export outputs are the reference's.
"""

import collections

import tensorflow as tf

from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.compat import facade_private
from trainer.compat import keras_losses
from trainer.facade.canned import metric_keys
from trainer.facade.canned import prediction_keys
from trainer.facade.head import base_head

ModeKeys = specs.ModeKeys
_KEYS = metric_keys.MetricKeys
_PRED = prediction_keys.PredictionKeys
_Reduction = tf.compat.v1.losses.Reduction

_DEFAULT_SERVING_KEY = base_head.DEFAULT_SERVING_KEY
_CLASSIFY_SERVING_KEY = base_head.CLASSIFY_SERVING_KEY
_REGRESS_SERVING_KEY = base_head.REGRESS_SERVING_KEY
_PREDICT_SERVING_KEY = base_head.PREDICT_SERVING_KEY

LossSpec = collections.namedtuple(
    'LossSpec',
    ['training_loss', 'unreduced_loss', 'weights', 'processed_labels'])

_create_eval_metrics_tuple = base_head.create_eval_metrics_tuple
_all_class_ids = base_head.all_class_ids


def _all_classes(logits, n_classes, label_vocabulary=None):
  """[batch_size, n_classes]: the class names on every row."""
  batch_size = tf.compat.v1.shape(logits)[0]
  names = (label_vocabulary if label_vocabulary else
           tf.strings.as_string(tf.range(n_classes)))
  return tf.tile(tf.expand_dims(names, 0), [batch_size, 1])


def _classification_output(scores, n_classes, label_vocabulary=None):
  """A ClassificationOutput of scores with every class name."""
  return facade_private.ClassificationOutput(
      scores=scores,
      classes=_all_classes(scores, n_classes, label_vocabulary))


def _summary_key(head_name, val):
  return f'{val}/{head_name}' if head_name else val


class _Head:
  """The interface of a v1 head.

  Subclasses give name, logits_dimension and create_loss(features, mode,
  logits, labels) -> LossSpec, and create_estimator_spec() or
  _create_tpu_estimator_spec(). (Not an ABC: as the reference's, a subclass
  missing members can still be made.)
  """

  @property
  def name(self):
    raise NotImplementedError('Calling an abstract method.')

  @property
  def logits_dimension(self):
    raise NotImplementedError('Calling an abstract method.')

  def create_loss(self, features, mode, logits, labels):
    """LossSpec(training loss, unreduced loss, weights, processed labels)."""
    raise NotImplementedError('Calling an abstract method.')

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, train_op_fn=None,
                            regularization_losses=None):
    """The EstimatorSpec of `mode` (from _create_tpu_estimator_spec)."""
    try:
      tpu_spec = self._create_tpu_estimator_spec(
          features, mode, logits, labels, optimizer, train_op_fn,
          regularization_losses)
    except NotImplementedError:
      raise NotImplementedError(
          'Subclasses of _Head must implement `create_estimator_spec()` or '
          '_create_tpu_estimator_spec().') from None
    return tpu_spec.as_estimator_spec()

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, train_op_fn=None,
                                 regularization_losses=None):
    raise NotImplementedError(
        'TPUEstimatorSpec not available for this model head.')


def _check_dense_labels_match_logits_and_reshape(labels, logits,
                                                 expected_labels_dimension):
  """labels of shape logits.shape[:-1] + [expected dimension] (one rank
  less gains a last dimension of 1); ValueError for None, SparseTensor or a
  static mismatch, a failing assert at run time otherwise."""
  if labels is None:
    raise ValueError(
        'You must provide a labels Tensor. Given: None. Suggested '
        'troubleshooting steps: Check that your data contain your label '
        'feature. Check that your input_fn properly parses and returns '
        'labels.')
  with tf.compat.v1.name_scope(None, 'labels', (labels, logits)) as scope:
    labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
    dim = expected_labels_dimension
    if isinstance(labels, tf.sparse.SparseTensor):
      raise ValueError(
          'SparseTensor labels are not supported. labels must be a Tensor of '
          f'shape [D0, D1, ..., DN, {dim}], e.g. [batch_size, {dim}]. '
          'Suggested Fix (1): Check the label feature in your data. Each '
          f'example must contain {dim} value(s). If not, your choice of '
          'label was probably incorrect. Suggested Fix (2): In your '
          'input_fn, use tf.sparse_tensor_to_dense() to turn labels into a '
          'Tensor.')
    if (labels.shape.ndims is not None and logits.shape.ndims is not None and
        labels.shape.ndims == logits.shape.ndims - 1):
      labels = tf.expand_dims(labels, -1)
    labels_shape = tf.compat.v1.shape(labels)
    logits_shape = tf.compat.v1.shape(logits)
    message = (f'labels shape must be [D0, D1, ... DN, {dim}]. Suggested '
               'Fix: check your n_classes argument to the estimator and/or '
               'the shape of your label.')
    rank_check = tf.compat.v1.debugging.assert_rank_at_least(
        labels, 2, message=message)
    with tf.control_dependencies([rank_check]):
      if labels.shape.ndims is not None:
        last = labels.shape[-1]
        if last is not None and last != dim:
          raise ValueError(
              f'Mismatched label shape. Expected labels dimension={dim}.  '
              f'Received {last}. Suggested Fix:If your classifier expects '
              'one-hot encoding label,check your n_classes argument to the '
              'estimator and/or the shape of your label. Otherwise, check '
              'the shape of your label.')
      expected = tf.concat([logits_shape[:-1], [dim]], axis=0)
      shape_check = tf.compat.v1.debugging.assert_equal(
          expected, labels_shape, message=message,
          data=['expected_labels_shape: ', expected, 'labels_shape: ',
                labels_shape])
      with tf.control_dependencies([shape_check]):
        return tf.identity(labels, name=scope)


def _get_weights_and_check_match_logits(features, weight_column, logits,
                                        allow_per_logit_weights=False):
  """The example weights (1. without a weight_column); see
  base_head.get_weights_and_check_match_logits. weight_column: a feature
  key or a numeric_column."""
  if (weight_column is not None and not isinstance(weight_column, str) and
      not isinstance(weight_column, base_head.numeric_column_type())):
    raise TypeError(
        'Weight column must be either a string or _DenseColumn. Given type: '
        f'{type(weight_column)}. (trainer.legacy reads weights from a '
        'feature key or a tf.feature_column.numeric_column.)')
  return base_head.get_weights_and_check_match_logits(
      features, weight_column, logits, allow_per_logit_weights)


def _check_logits_final_dim(logits, expected_logits_dimension):
  """logits as float32, checked to be [D0, D1, ... DN, logits_dimension]."""
  with tf.compat.v1.name_scope(None, 'logits', (logits,)) as scope:
    logits = tf.cast(logits, dtype=tf.float32)
    logits_shape = tf.compat.v1.shape(logits)
    rank_check = tf.compat.v1.debugging.assert_rank_at_least(
        logits, 2, data=[logits_shape],
        message='logits shape must be [D0, D1, ... DN, logits_dimension]')
    with tf.control_dependencies([rank_check]):
      static = logits.shape
      if static.ndims is not None and static[-1] is not None:
        if (isinstance(expected_logits_dimension, int) and
            static[-1] != expected_logits_dimension):
          raise ValueError(
              'logits shape must be [D0, D1, ... DN, '
              f'logits_dimension={expected_logits_dimension}], got '
              f'{static}.')
        return logits
      dim_check = tf.compat.v1.debugging.assert_equal(
          expected_logits_dimension, logits_shape[-1], data=[logits_shape],
          message=('logits shape must be [D0, D1, ... DN, '
                   f'logits_dimension={expected_logits_dimension}]'))
      with tf.control_dependencies([dim_check]):
        return tf.identity(logits, name=scope)


def _validate_loss_fn_args(loss_fn):
  """ValueError unless loss_fn takes labels, logits and at most features."""
  args = estimator_calls.fn_args(loss_fn)
  for required in ('labels', 'logits'):
    if required not in args:
      raise ValueError(f'loss_fn must contain argument: {required}. '
                       f'Given arguments: {args}')
  unexpected = list(set(args) - {'labels', 'logits', 'features'})
  if unexpected:
    raise ValueError(f'loss_fn has unexpected args: {unexpected}')


_validate_n_classes = base_head.validate_n_classes


def _validate_loss_reduction(loss_reduction):
  if (loss_reduction not in _Reduction.all() or
      loss_reduction == _Reduction.NONE):
    raise ValueError(f'Invalid loss_reduction: {loss_reduction}')


def _call_loss_fn(loss_fn, labels, logits, features, expected_loss_dim=1):
  """loss_fn(labels=, logits=[, features=]), asserted at run time to have
  the shape logits.shape[:-1] + [expected_loss_dim]."""
  kwargs = {}
  if 'features' in estimator_calls.fn_args(loss_fn):
    kwargs['features'] = features
  values = [labels, logits] + list((features or {}).values())
  with tf.compat.v1.name_scope(None, 'call_loss_fn', values):
    loss = loss_fn(labels=labels, logits=logits, **kwargs)
    logits_shape = tf.compat.v1.shape(logits, name='logits_shape')
    expected = tf.concat([logits_shape[:-1], [expected_loss_dim]], axis=0,
                         name='expected_loss_shape')
    loss_shape = tf.compat.v1.shape(loss, name='loss_shape')
    check = tf.debugging.Assert(
        tf.reduce_all(tf.math.equal(loss_shape, expected)),
        data=['loss_fn must return Tensor of shape '
              f'[D0, D1, ... DN, {expected_loss_dim}]. ',
              'logits_shape: ', logits_shape, 'loss_shape: ', loss_shape],
        name='check_loss_shape')
    with tf.control_dependencies([check]):
      return tf.identity(loss)


def _weighted(values, weights):
  """values as float32 and weights broadcast to them (None stays None)."""
  if weights is not None:
    weights = keras_losses.broadcast_weights(weights, values)
  return values, weights


def _indicator_labels_mean(labels, weights=None, name=None):
  with tf.compat.v1.name_scope(name, 'labels_mean',
                               (labels, weights)) as scope:
    labels, weights = _weighted(
        tf.cast(labels, name='labels', dtype=tf.float32), weights)
    return tf.compat.v1.metrics.mean(labels, weights=weights, name=scope)


def _accuracy_baseline(labels_mean):
  """max(label mean, 1 - label mean): (value, update_op)."""
  with tf.compat.v1.name_scope(None, 'accuracy_baseline', labels_mean):
    value, update_op = labels_mean
    return (tf.math.maximum(value, 1. - value, name='value'),
            tf.math.maximum(update_op, 1 - update_op, name='update_op'))


def _predictions_mean(predictions, weights=None, name=None):
  with tf.compat.v1.name_scope(name, 'predictions_mean',
                               (predictions, weights)) as scope:
    predictions, weights = _weighted(
        tf.cast(predictions, name='predictions', dtype=tf.float32), weights)
    return tf.compat.v1.metrics.mean(predictions, weights=weights,
                                     name=scope)


def _auc(labels, predictions, weights=None, curve='ROC', name=None):
  with tf.compat.v1.name_scope(name, 'auc',
                               (predictions, labels, weights)) as scope:
    predictions, weights = _weighted(
        tf.cast(predictions, name='predictions', dtype=tf.float32), weights)
    return tf.compat.v1.metrics.auc(labels=labels, predictions=predictions,
                                    weights=weights, curve=curve, name=scope)


def _accuracy_at_threshold(labels, predictions, weights, threshold, name=None):
  with tf.compat.v1.name_scope(
      name, f'accuracy_at_{threshold}',
      (predictions, labels, weights, threshold)) as scope:
    return tf.compat.v1.metrics.accuracy(
        labels=labels,
        predictions=tf.compat.v1.to_float(
            tf.math.greater_equal(predictions, threshold)),
        weights=weights, name=scope)


def _at_threshold(metric, labels, predictions, weights, threshold, name,
                  default_name):
  with tf.compat.v1.name_scope(
      name, default_name, (predictions, labels, weights, threshold)) as scope:
    value, update_op = metric(labels=labels, predictions=predictions,
                              thresholds=(threshold,), weights=weights,
                              name=scope)
    return tf.compat.v1.squeeze(value), tf.compat.v1.squeeze(update_op)


def _precision_at_threshold(labels, predictions, weights, threshold,
                            name=None):
  return _at_threshold(tf.compat.v1.metrics.precision_at_thresholds, labels,
                       predictions, weights, threshold, name,
                       f'precision_at_{threshold}')


def _recall_at_threshold(labels, predictions, weights, threshold, name=None):
  return _at_threshold(tf.compat.v1.metrics.recall_at_thresholds, labels,
                       predictions, weights, threshold, name,
                       f'recall_at_{threshold}')


def _append_update_ops(train_op):
  """train_op grouped with the UPDATE_OPS collection, if it has any."""
  update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
  if update_ops:
    return tf.group(train_op, *update_ops)
  return train_op


def _assert_range(labels, n_classes, message=None):
  """labels, run after asserts that they are in [0, n_classes - 1]."""
  with tf.compat.v1.name_scope(None, 'assert_range', (labels,)):
    at_most = tf.compat.v1.debugging.assert_less_equal(
        labels, tf.convert_to_tensor(n_classes - 1, dtype=labels.dtype),
        message=message or 'Labels must <= n_classes - 1')
    at_least = tf.compat.v1.debugging.assert_non_negative(
        labels, message=message or 'Labels must >= 0')
    with tf.control_dependencies((at_most, at_least)):
      return tf.identity(labels)


def _class_id_lookup(vocabulary, labels):
  return base_head.VocabularyTables(vocabulary).class_ids(labels)


def _class_names(vocabulary, class_ids):
  return base_head.VocabularyTables(vocabulary).class_names(class_ids)


class _StandardHead(_Head):
  """What the three v1 heads share: the spec of each mode from their
  _predictions, create_loss, _eval_metrics_kwargs and _export_outputs."""

  _loss_reduction = _Reduction.SUM
  _name = None

  @property
  def name(self):
    return self._name

  def _regularized(self, training_loss, regularization_losses):
    """(regularization loss or None, regularized training loss)."""
    if not regularization_losses:
      return None, training_loss
    regularization = tf.math.add_n(regularization_losses)
    return regularization, tf.math.add_n([training_loss, regularization])

  def _train_op(self, loss, optimizer, train_op_fn):
    if optimizer is not None:
      if train_op_fn is not None:
        raise ValueError('train_op_fn and optimizer cannot both be set.')
      train_op = optimizer.minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
    elif train_op_fn is not None:
      train_op = train_op_fn(loss)
    else:
      raise ValueError('train_op_fn and optimizer cannot both be None.')
    return _append_update_ops(train_op)

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, train_op_fn=None,
                                 regularization_losses=None):
    with tf.compat.v1.name_scope(self._name, 'head'):
      logits, predictions = self._predictions(logits)
      if mode == ModeKeys.PREDICT:
        return specs.TPUEstimatorSpec(
            mode=ModeKeys.PREDICT, predictions=predictions,
            export_outputs=self._export_outputs(predictions))
      loss_spec = self.create_loss(features=features, mode=mode,
                                   logits=logits, labels=labels)
      regularization, loss = self._regularized(loss_spec.training_loss,
                                               regularization_losses)
      if mode == ModeKeys.EVAL:
        kwargs = self._eval_metrics_kwargs(loss_spec, labels, predictions)
        kwargs.update(weights=loss_spec.weights,
                      unreduced_loss=loss_spec.unreduced_loss,
                      regularization_loss=regularization)
        return specs.TPUEstimatorSpec(
            mode=ModeKeys.EVAL, predictions=predictions, loss=loss,
            eval_metrics=_create_eval_metrics_tuple(self._eval_metric_ops,
                                                    kwargs))
      train_op = self._train_op(loss, optimizer, train_op_fn)
      mean_loss = None
      if self._loss_reduction == _Reduction.SUM:
        weight_sum = tf.math.reduce_sum(
            loss_spec.weights * tf.ones_like(loss_spec.unreduced_loss))
        mean_loss = loss_spec.training_loss / weight_sum
    with tf.compat.v1.name_scope(''):
      tf.compat.v1.summary.scalar(_summary_key(self._name, _KEYS.LOSS), loss)
      if mean_loss is not None:
        tf.compat.v1.summary.scalar(
            _summary_key(self._name, _KEYS.LOSS_MEAN), mean_loss)
      if regularization is not None:
        tf.compat.v1.summary.scalar(
            _summary_key(self._name, _KEYS.LOSS_REGULARIZATION),
            regularization)
    return specs.TPUEstimatorSpec(mode=ModeKeys.TRAIN,
                                  predictions=predictions, loss=loss,
                                  train_op=train_op)

  def _regularization_metric(self, metric_ops, regularization_loss):
    if regularization_loss is not None:
      metric_ops[_summary_key(self._name, _KEYS.LOSS_REGULARIZATION)] = (
          tf.compat.v1.metrics.mean(values=regularization_loss,
                                    name=_KEYS.LOSS_REGULARIZATION))
    return metric_ops


def _multi_class_head_with_softmax_cross_entropy_loss(
    n_classes, weight_column=None, label_vocabulary=None,
    loss_reduction=_Reduction.SUM, loss_fn=None, name=None):
  """A v1 head for n_classes > 2 classes with softmax cross entropy; labels
  [D0, ... DN, 1] class ids (or strings of label_vocabulary)."""
  if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                     (list, tuple)):
    raise ValueError('label_vocabulary should be a list or a tuple. Given '
                     f'type: {type(label_vocabulary)}')
  _validate_loss_reduction(loss_reduction)
  if loss_fn:
    _validate_loss_fn_args(loss_fn)
  return _MultiClassHeadWithSoftmaxCrossEntropyLoss(
      n_classes=n_classes, weight_column=weight_column,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction,
      loss_fn=loss_fn, name=name)


class _MultiClassHeadWithSoftmaxCrossEntropyLoss(_StandardHead):
  """See `_multi_class_head_with_softmax_cross_entropy_loss`."""

  def __init__(self, n_classes, weight_column=None, label_vocabulary=None,
               loss_reduction=_Reduction.SUM, loss_fn=None, name=None):
    if n_classes is None:
      raise ValueError('n_classes cannot be None')
    self._n_classes = _validate_n_classes(n_classes)
    self._weight_column = weight_column
    self._label_vocabulary = label_vocabulary
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name

  @property
  def logits_dimension(self):
    return self._n_classes

  def _eval_metric_ops(self, labels, class_ids, weights, unreduced_loss,
                       regularization_loss):
    with tf.compat.v1.name_scope(
        None, 'metrics',
        (labels, class_ids, weights, unreduced_loss, regularization_loss)):
      metric_ops = {
          _summary_key(self._name, _KEYS.LOSS_MEAN): tf.compat.v1.metrics.mean(
              values=unreduced_loss, weights=weights, name=_KEYS.LOSS_MEAN),
          _summary_key(self._name, _KEYS.ACCURACY):
              tf.compat.v1.metrics.accuracy(
                  labels=labels, predictions=class_ids, weights=weights,
                  name=_KEYS.ACCURACY),
      }
      return self._regularization_metric(metric_ops, regularization_loss)

  def _label_ids(self, labels):
    if self._label_vocabulary is None:
      if not labels.dtype.is_integer:
        raise ValueError(
            f'Labels dtype should be integer. Instead got {labels.dtype}.')
      label_ids = labels
    else:
      if labels.dtype != tf.string:
        raise ValueError('Labels dtype should be string if there is a '
                         f'vocabulary. Instead got {labels.dtype}')
      label_ids = _class_id_lookup(self._label_vocabulary, labels)
    return _assert_range(label_ids, self._n_classes)

  def create_loss(self, features, mode, logits, labels):
    del mode
    logits = tf.convert_to_tensor(logits)
    labels = _check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    label_ids = self._label_ids(labels)
    if self._loss_fn:
      loss = _call_loss_fn(loss_fn=self._loss_fn, labels=label_ids,
                           logits=logits, features=features,
                           expected_loss_dim=1)
    else:
      loss = tf.expand_dims(
          tf.compat.v1.losses.sparse_softmax_cross_entropy(
              labels=label_ids, logits=logits, reduction=_Reduction.NONE),
          axis=-1)
    weights = _get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    training_loss = tf.compat.v1.losses.compute_weighted_loss(
        loss, weights=weights, reduction=self._loss_reduction)
    return LossSpec(training_loss=training_loss, unreduced_loss=loss,
                    weights=weights, processed_labels=label_ids)

  def _predictions(self, logits):
    logits = _check_logits_final_dim(logits, self.logits_dimension)
    with tf.compat.v1.name_scope(None, 'predictions', (logits,)):
      # In the reference's order (its graph's op names).
      all_class_ids = _all_class_ids(logits, self._n_classes)
      all_classes = _all_classes(logits, self._n_classes,
                                 self._label_vocabulary)
      class_ids = tf.expand_dims(
          tf.math.argmax(logits, axis=-1, name=_PRED.CLASS_IDS), axis=-1)
      if self._label_vocabulary:
        classes = _class_names(self._label_vocabulary, class_ids)
      else:
        classes = tf.strings.as_string(class_ids, name='str_classes')
      return logits, {
          _PRED.LOGITS: logits,
          _PRED.PROBABILITIES: tf.nn.softmax(logits,
                                             name=_PRED.PROBABILITIES),
          _PRED.CLASS_IDS: class_ids,
          _PRED.CLASSES: classes,
          _PRED.ALL_CLASS_IDS: all_class_ids,
          _PRED.ALL_CLASSES: all_classes,
      }

  def _export_outputs(self, predictions):
    classifier_output = _classification_output(
        scores=predictions[_PRED.PROBABILITIES], n_classes=self._n_classes,
        label_vocabulary=self._label_vocabulary)
    return {_DEFAULT_SERVING_KEY: classifier_output,
            _CLASSIFY_SERVING_KEY: classifier_output,
            _PREDICT_SERVING_KEY: facade_private.PredictOutput(predictions)}

  def _eval_metrics_kwargs(self, loss_spec, labels, predictions):
    del labels
    return {'labels': loss_spec.processed_labels,
            'class_ids': predictions[_PRED.CLASS_IDS]}


def _binary_logistic_head_with_sigmoid_cross_entropy_loss(
    weight_column=None, thresholds=None, label_vocabulary=None,
    loss_reduction=_Reduction.SUM, loss_fn=None, name=None):
  """A v1 head for binary classification with sigmoid cross entropy; labels
  [D0, ... DN, 1] in [0, 1] (or strings of label_vocabulary)."""
  thresholds = tuple(thresholds) if thresholds else ()
  if label_vocabulary is not None and not isinstance(label_vocabulary,
                                                     (list, tuple)):
    raise TypeError('label_vocabulary should be a list or tuple. Given type: '
                    f'{type(label_vocabulary)}')
  for threshold in thresholds:
    if threshold <= 0.0 or threshold >= 1.0:
      raise ValueError(f'thresholds not in (0, 1): {(thresholds,)}.')
  _validate_loss_reduction(loss_reduction)
  if loss_fn:
    _validate_loss_fn_args(loss_fn)
  return _BinaryLogisticHeadWithSigmoidCrossEntropyLoss(
      weight_column=weight_column, thresholds=thresholds,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction,
      loss_fn=loss_fn, name=name)


class _BinaryLogisticHeadWithSigmoidCrossEntropyLoss(_StandardHead):
  """See `_binary_logistic_head_with_sigmoid_cross_entropy_loss`."""

  def __init__(self, weight_column=None, thresholds=None,
               label_vocabulary=None, loss_reduction=_Reduction.SUM,
               loss_fn=None, name=None):
    self._weight_column = weight_column
    self._thresholds = tuple(thresholds) if thresholds else ()
    self._label_vocabulary = label_vocabulary
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name

  @property
  def logits_dimension(self):
    return 1

  def _eval_metric_ops(self, labels, logits, logistic, class_ids, weights,
                       unreduced_loss, regularization_loss):
    del logits
    key = lambda k: _summary_key(self._name, k)
    metrics = tf.compat.v1.metrics
    with tf.compat.v1.name_scope(
        None, 'metrics', (labels, logistic, class_ids, weights,
                          unreduced_loss, regularization_loss)):
      labels_mean = _indicator_labels_mean(labels=labels, weights=weights,
                                           name=_KEYS.LABEL_MEAN)
      metric_ops = {
          key(_KEYS.LOSS_MEAN): metrics.mean(
              values=unreduced_loss, weights=weights, name=_KEYS.LOSS_MEAN),
          key(_KEYS.ACCURACY): metrics.accuracy(
              labels=labels, predictions=class_ids, weights=weights,
              name=_KEYS.ACCURACY),
          key(_KEYS.PRECISION): metrics.precision(
              labels=labels, predictions=class_ids, weights=weights,
              name=_KEYS.PRECISION),
          key(_KEYS.RECALL): metrics.recall(
              labels=labels, predictions=class_ids, weights=weights,
              name=_KEYS.RECALL),
          key(_KEYS.PREDICTION_MEAN): _predictions_mean(
              predictions=logistic, weights=weights,
              name=_KEYS.PREDICTION_MEAN),
          key(_KEYS.LABEL_MEAN): labels_mean,
          key(_KEYS.ACCURACY_BASELINE): _accuracy_baseline(labels_mean),
          key(_KEYS.AUC): _auc(labels=labels, predictions=logistic,
                               weights=weights, name=_KEYS.AUC),
          key(_KEYS.AUC_PR): _auc(labels=labels, predictions=logistic,
                                  weights=weights, curve='PR',
                                  name=_KEYS.AUC_PR),
      }
      self._regularization_metric(metric_ops, regularization_loss)
      for threshold in self._thresholds:
        for fmt, metric in (
            (_KEYS.ACCURACY_AT_THRESHOLD, _accuracy_at_threshold),
            (_KEYS.PRECISION_AT_THRESHOLD, _precision_at_threshold),
            (_KEYS.RECALL_AT_THRESHOLD, _recall_at_threshold)):
          name = fmt % threshold
          metric_ops[key(name)] = metric(
              labels=labels, predictions=logistic, weights=weights,
              threshold=threshold, name=name)
      return metric_ops

  def create_loss(self, features, mode, logits, labels):
    del mode
    logits = tf.convert_to_tensor(logits)
    labels = _check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._label_vocabulary is not None:
      labels = _class_id_lookup(self._label_vocabulary, labels)
    labels = _assert_range(tf.cast(labels, dtype=tf.float32), n_classes=2)
    if self._loss_fn:
      loss = _call_loss_fn(loss_fn=self._loss_fn, labels=labels,
                           logits=logits, features=features,
                           expected_loss_dim=1)
    else:
      loss = tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(
          labels=labels, logits=logits)
    weights = _get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    training_loss = tf.compat.v1.losses.compute_weighted_loss(
        loss, weights=weights, reduction=self._loss_reduction)
    return LossSpec(training_loss=training_loss, unreduced_loss=loss,
                    weights=weights, processed_labels=labels)

  def _predictions(self, logits):
    with tf.compat.v1.name_scope(None, 'predictions', (logits,)):
      logits = _check_logits_final_dim(logits, self.logits_dimension)
      two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1,
                                   name='two_class_logits')
      class_ids = tf.expand_dims(
          tf.math.argmax(two_class_logits, axis=-1, name=_PRED.CLASS_IDS),
          axis=-1)
      if self._label_vocabulary:
        classes = _class_names(self._label_vocabulary, class_ids)
      else:
        classes = tf.strings.as_string(class_ids, name='str_classes')
      return logits, {
          _PRED.LOGITS: logits,
          _PRED.LOGISTIC: tf.math.sigmoid(logits, name=_PRED.LOGISTIC),
          _PRED.PROBABILITIES: tf.nn.softmax(two_class_logits,
                                             name=_PRED.PROBABILITIES),
          _PRED.CLASS_IDS: class_ids,
          _PRED.CLASSES: classes,
          _PRED.ALL_CLASS_IDS: _all_class_ids(logits, n_classes=2),
          _PRED.ALL_CLASSES: _all_classes(logits, 2, self._label_vocabulary),
      }

  def _export_outputs(self, predictions):
    classifier_output = _classification_output(
        scores=predictions[_PRED.PROBABILITIES], n_classes=2,
        label_vocabulary=self._label_vocabulary)
    return {
        _DEFAULT_SERVING_KEY: classifier_output,
        _CLASSIFY_SERVING_KEY: classifier_output,
        _REGRESS_SERVING_KEY: facade_private.RegressionOutput(
            value=predictions[_PRED.LOGISTIC]),
        _PREDICT_SERVING_KEY: facade_private.PredictOutput(predictions)}

  def _eval_metrics_kwargs(self, loss_spec, labels, predictions):
    del labels
    return {'labels': loss_spec.processed_labels,
            'logits': predictions[_PRED.LOGITS],
            'logistic': predictions[_PRED.LOGISTIC],
            'class_ids': predictions[_PRED.CLASS_IDS]}


def _regression_head(weight_column=None, label_dimension=1,
                     loss_reduction=_Reduction.SUM, loss_fn=None,
                     inverse_link_fn=None, name=None):
  """A v1 head for regression with the mean squared error (or loss_fn);
  inverse_link_fn maps logits to the predicted values."""
  _validate_loss_reduction(loss_reduction)
  if loss_fn:
    _validate_loss_fn_args(loss_fn)
  return _RegressionHeadWithMeanSquaredErrorLoss(
      weight_column=weight_column, label_dimension=label_dimension,
      loss_reduction=loss_reduction, loss_fn=loss_fn,
      inverse_link_fn=inverse_link_fn, name=name)


class _RegressionHeadWithMeanSquaredErrorLoss(_StandardHead):
  """See `_regression_head`."""

  def __init__(self, label_dimension, weight_column=None,
               loss_reduction=_Reduction.SUM, loss_fn=None,
               inverse_link_fn=None, name=None):
    if label_dimension < 1:
      raise ValueError(f'Invalid label_dimension {label_dimension}.')
    self._logits_dimension = label_dimension
    self._weight_column = weight_column
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._inverse_link_fn = inverse_link_fn
    self._name = name

  @property
  def logits_dimension(self):
    return self._logits_dimension

  def create_loss(self, features, mode, logits, labels):
    del mode
    logits = tf.convert_to_tensor(logits)
    labels = tf.cast(_check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits,
        expected_labels_dimension=self._logits_dimension), dtype=tf.float32)
    if self._loss_fn:
      loss = _call_loss_fn(loss_fn=self._loss_fn, labels=labels,
                           logits=logits, features=features,
                           expected_loss_dim=self._logits_dimension)
    else:
      loss = tf.compat.v1.losses.mean_squared_error(
          labels=labels, predictions=logits, reduction=_Reduction.NONE)
    weights = _get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits,
        allow_per_logit_weights=True)
    training_loss = tf.compat.v1.losses.compute_weighted_loss(
        loss, weights=weights, reduction=self._loss_reduction)
    return LossSpec(training_loss=training_loss, unreduced_loss=loss,
                    weights=weights, processed_labels=labels)

  def _eval_metric_ops(self, predicted_value, labels, weights, unreduced_loss,
                       regularization_loss):
    metric_ops = {
        _summary_key(self._name, _KEYS.LOSS_MEAN): tf.compat.v1.metrics.mean(
            values=unreduced_loss, weights=weights),
        _summary_key(self._name, _KEYS.PREDICTION_MEAN): _predictions_mean(
            predictions=predicted_value, weights=weights,
            name=_KEYS.PREDICTION_MEAN),
        # The labels as given, as the reference reads them.
        _summary_key(self._name, _KEYS.LABEL_MEAN): tf.compat.v1.metrics.mean(
            values=labels, weights=weights),
    }
    return self._regularization_metric(metric_ops, regularization_loss)

  def _predictions(self, logits):
    logits = _check_logits_final_dim(logits, self._logits_dimension)
    if self._inverse_link_fn:
      return logits, {_PRED.PREDICTIONS: self._inverse_link_fn(logits),
                      _PRED.LOGITS: logits}
    return logits, {_PRED.PREDICTIONS: logits}

  def _export_outputs(self, predictions):
    regression_output = facade_private.RegressionOutput(
        value=predictions[_PRED.PREDICTIONS])
    return {_DEFAULT_SERVING_KEY: regression_output,
            _REGRESS_SERVING_KEY: regression_output,
            _PREDICT_SERVING_KEY: facade_private.PredictOutput(predictions)}

  def _eval_metrics_kwargs(self, loss_spec, labels, predictions):
    del loss_spec
    return {'predicted_value': predictions[_PRED.PREDICTIONS],
            'labels': labels}


def _binary_logistic_or_multi_class_head(n_classes, weight_column,
                                         label_vocabulary, loss_reduction):
  """The binary head for n_classes == 2, else the multi-class one."""
  if n_classes == 2:
    return _binary_logistic_head_with_sigmoid_cross_entropy_loss(
        weight_column=weight_column, label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction)
  return _multi_class_head_with_softmax_cross_entropy_loss(
      n_classes, weight_column=weight_column,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
