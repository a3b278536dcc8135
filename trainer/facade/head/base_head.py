"""tf.estimator.Head and the checks and pieces every head shares.

A head turns a model's logits into predictions, a loss, metrics, a train op
and export outputs, as tensorflow_estimator 2.15's heads do (the contract
the upstream head tests state): the same shape checks and error messages
(static ones raise ValueError; in a TF1 graph, shapes known only at run time
fail the Session run with InvalidArgumentError), the same reductions
(Keras 2's compute_weighted_loss), metrics as tf.keras Metric objects, and
the same export output keys. Works eagerly and in a TF1 graph.
"""

import abc

import tensorflow as tf

from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.compat import estimator_reexports
from trainer.compat import facade_private
from trainer.compat import keras_losses
from trainer.facade.canned import metric_keys
from trainer.facade.canned import prediction_keys

ModeKeys = specs.ModeKeys

DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
# The other export output keys heads use (a convention, not TF Serving's).
CLASSIFY_SERVING_KEY = 'classification'
REGRESS_SERVING_KEY = 'regression'
PREDICT_SERVING_KEY = 'predict'

_LABEL_NONE_ERR_MSG = (
    'You must provide a labels Tensor. Given: None. '
    'Suggested troubleshooting steps: Check that your data contains your label '
    'feature. Check that your input_fn properly parses and returns labels.')
# feature_column's v1 classes the reference's heads import by name.
_LazyBuilder = estimator_reexports.LazyBuilder
_NumericColumn = estimator_reexports.NumericColumn
_SPARSE_LABEL_ERR_MSG = (
    'SparseTensor labels are not supported. Labels must be a Tensor of shape '
    '[D0, D1, ..., DN, {}], e.g. [batch_size, {}].Suggested Fix (1): Check the'
    ' label feature in your data. Each example must contain {} value(s). If '
    'not, your choice of label was probably incorrect. Suggested Fix (2): In '
    'your input_fn, use tf.sparse_tensor_to_dense() to turn labels into a '
    'Tensor.')
_MISMATCHED_LABEL_DIM_ERR_MSG = (
    'Mismatched label shape. Expected labels dimension={}.  Received {}. '
    'Suggested Fix: If your classifier expects one-hot encoding label, check '
    'your n_classes argument to the estimator and/or the shape of your label. '
    'Otherwise, check the shape of your label.')
_LABEL_SHAPE_ERR_MSG = (
    'labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your '
    'n_classes argument to the head and/or the shape of your label.')
_LOGITS_SHAPE_ERR_MSG = (
    'logits shape must be [D0, D1, ... DN, logits_dimension]')
_VALIDATION_ERROR_MSG = '{} should be a list or a tuple. Given type: {}.'


class Head(abc.ABC):
  """Interface of a model's head (tf.estimator.Head).

  Given logits, a head computes predictions, the loss, metrics, the train
  op and export outputs; create_estimator_spec() puts them in the
  EstimatorSpec a model_fn returns. A subclass implements the abstract
  members and either create_estimator_spec() or
  _create_tpu_estimator_spec().
  """

  @property
  @abc.abstractmethod
  def name(self):
    """The head's name (str or None): suffixes its metric and summary keys."""

  @property
  @abc.abstractmethod
  def logits_dimension(self):
    """The size of the last dimension of the logits it takes."""

  @property
  @abc.abstractmethod
  def loss_reduction(self):
    """How the training loss is reduced over the batch (tf.losses.Reduction)."""

  @abc.abstractmethod
  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    """The scalar training loss, regularization losses added."""

  @abc.abstractmethod
  def predictions(self, logits, keys=None):
    """{prediction key: Tensor} from logits (all keys when keys is None)."""

  @abc.abstractmethod
  def metrics(self, regularization_losses=None):
    """{metric key: a new tf.keras Metric} for update_metrics() to update."""

  @abc.abstractmethod
  def update_metrics(self, eval_metrics, features, logits, labels,
                     mode=None, regularization_losses=None):
    """Updates eval_metrics (from metrics()) with a batch; returns them."""

  def _summary_key(self, key):
    return f'{key}/{self.name}' if self.name else key

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None):
    """The EstimatorSpec of `mode` for a model_fn to return.

    In TRAIN, exactly one of `optimizer` (a tf.keras optimizer; its
    get_updates(loss, trainable_variables) makes the train op) and
    `train_op_fn` (loss -> train op) must be given; update_ops run with the
    train op.
    """
    try:
      tpu_spec = self._create_tpu_estimator_spec(
          features=features, mode=mode, logits=logits, labels=labels,
          optimizer=optimizer, trainable_variables=trainable_variables,
          train_op_fn=train_op_fn, update_ops=update_ops,
          regularization_losses=regularization_losses)
    except NotImplementedError:
      raise NotImplementedError(
          'Subclasses of Head must implement `create_estimator_spec()` or '
          '_create_tpu_estimator_spec().') from None
    return tpu_spec.as_estimator_spec()

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, trainable_variables=None,
                                 train_op_fn=None, update_ops=None,
                                 regularization_losses=None):
    """The TPUEstimatorSpec of `mode` (eval metrics as (fn, tensors))."""
    raise NotImplementedError(
        'TPUEstimatorSpec not available for this model head.')


class SingleHead(Head):
  """A head of one objective: one logits Tensor, one labels Tensor.

  Builds its TPUEstimatorSpec from the subclass's loss(), predictions(),
  metrics(), update_metrics() and _export_outputs(predictions).
  """

  @abc.abstractmethod
  def _export_outputs(self, predictions):
    """{export output key: ExportOutput} of the PREDICT spec."""

  def _create_tpu_estimator_spec(self, features, mode, logits, labels=None,
                                 optimizer=None, trainable_variables=None,
                                 train_op_fn=None, update_ops=None,
                                 regularization_losses=None):
    with tf.compat.v1.name_scope(self.name, 'head'):
      predictions = self.predictions(logits)
      if mode == ModeKeys.PREDICT:
        return specs.TPUEstimatorSpec(
            mode=ModeKeys.PREDICT, predictions=predictions,
            export_outputs=self._export_outputs(predictions))
      loss = self.loss(labels=labels, logits=logits, features=features,
                       mode=mode, regularization_losses=regularization_losses)
      if mode == ModeKeys.EVAL:
        eval_metrics = self.metrics(
            regularization_losses=regularization_losses)
        return specs.TPUEstimatorSpec(
            mode=ModeKeys.EVAL, predictions=predictions, loss=loss,
            eval_metrics=create_eval_metrics_tuple(self.update_metrics, {
                'eval_metrics': eval_metrics, 'features': features,
                'logits': logits, 'labels': labels,
                'regularization_losses': regularization_losses}))
      train_op = create_estimator_spec_train_op(
          head_name=self.name, optimizer=optimizer,
          trainable_variables=trainable_variables, train_op_fn=train_op_fn,
          update_ops=update_ops, regularized_training_loss=loss,
          loss_reduction=self.loss_reduction)
    create_estimator_spec_summary(loss, regularization_losses,
                                  self._summary_key)
    return specs.TPUEstimatorSpec(mode=ModeKeys.TRAIN,
                                  predictions=predictions, loss=loss,
                                  train_op=train_op)


def _shape(tensor):
  """The static shape as a tuple (eager tensors have a full one)."""
  return tuple(tensor.shape.as_list())


def _assert_all(checks, labels_or_logits):
  """labels_or_logits, run after the assert ops `checks` (graph mode)."""
  with tf.control_dependencies(checks):
    return tf.identity(labels_or_logits)


def check_labels_given(labels):
  """ValueError (saying where labels come from) if labels is None."""
  if labels is None:
    raise ValueError(_LABEL_NONE_ERR_MSG)


def check_dense_labels_match_logits_and_reshape(labels, logits,
                                                expected_labels_dimension):
  """labels as a Tensor of shape logits.shape[:-1] + [expected dimension].

  Labels one rank below the logits gain a last dimension of 1. ValueError
  for None or SparseTensor labels or a static mismatch; in a TF1 graph a
  mismatch known only at run time fails the run (InvalidArgumentError).
  """
  check_labels_given(labels)
  with tf.compat.v1.name_scope('labels', values=(labels, logits)) as scope:
    labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
    if isinstance(labels, tf.sparse.SparseTensor):
      raise ValueError(
          _SPARSE_LABEL_ERR_MSG.format(expected_labels_dimension,
                                       expected_labels_dimension,
                                       expected_labels_dimension))
    if (labels.shape.ndims is not None and logits.shape.ndims is not None and
        labels.shape.ndims == logits.shape.ndims - 1):
      labels = tf.expand_dims(labels, -1)
    if tf.executing_eagerly():
      labels_shape = _shape(labels)
      if len(labels_shape) < 2:
        raise ValueError('labels must have rank at least 2.  Received rank '
                         f'{len(labels_shape)}, shape {labels_shape}')
      if labels_shape[-1] != expected_labels_dimension:
        raise ValueError(_MISMATCHED_LABEL_DIM_ERR_MSG.format(
            expected_labels_dimension, labels_shape[-1]))
      expected = _shape(logits)[:-1] + (expected_labels_dimension,)
      if expected != labels_shape:
        raise ValueError(
            f'{_LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension)}, '
            f'expected_labels_shape: {expected}. labels_shape: '
            f'{labels_shape}.')
      return labels
    message = _LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension)
    rank_check = tf.compat.v1.debugging.assert_rank_at_least(
        labels, 2, message=message)
    with tf.control_dependencies([rank_check]):
      if labels.shape.ndims is not None:
        last = labels.shape[-1]
        if last is not None and last != expected_labels_dimension:
          raise ValueError(_MISMATCHED_LABEL_DIM_ERR_MSG.format(
              expected_labels_dimension, last))
      expected = tf.concat([tf.compat.v1.shape(logits)[:-1],
                            [expected_labels_dimension]], axis=0)
      actual = tf.compat.v1.shape(labels)
      shape_check = tf.compat.v1.debugging.assert_equal(
          expected, actual, message=message,
          data=['expected_labels_shape: ', expected, 'labels_shape: ',
                actual])
      with tf.control_dependencies([shape_check]):
        return tf.identity(labels, name=scope)


def _raw_weights(features, key):
  """features[key] as a dense Tensor of rank >= 2 (rank 1 gains a last
  dimension of 1), as feature columns read a feature."""
  if features is None or key not in features:
    raise ValueError(f'Feature {key} is not in features dictionary.')
  value = tf.compat.v1.convert_to_tensor_or_sparse_tensor(features[key])
  if isinstance(value, tf.sparse.SparseTensor):
    raise ValueError(
        'The corresponding Tensor of numerical column must be a Tensor. '
        f'SparseTensor is not supported. key: {key}')
  rank = value.shape.ndims
  if rank == 0:
    raise ValueError(
        f'Feature (key: {key}) cannot have rank 0. Given: {value}')
  if rank == 1:
    return tf.expand_dims(value, -1)
  if rank is not None:
    return value
  rank_check = tf.compat.v1.debugging.assert_positive(
      tf.rank(value),
      message=f'Feature (key: {key}) cannot have rank 0. Given: {value}')
  with tf.control_dependencies([rank_check]):
    return tf.cond(tf.equal(1, tf.rank(value)),
                   lambda: tf.expand_dims(value, -1), lambda: value)


def numeric_column_type():
  """The class of tf.feature_column.numeric_column (v1 and v2 share it)."""
  return type(tf.feature_column.numeric_column('weight'))


def get_weights_and_check_match_logits(features, weight_column, logits,
                                       allow_per_logit_weights=False):
  """The example weights of `weight_column` (1. without one), float32, of
  shape logits.shape[:-1] + [1] (or logits.shape where per-logit weights
  are allowed); weights one rank below the logits gain a last dimension.

  weight_column is a feature key or a tf.feature_column.numeric_column
  (its normalizer_fn applied).
  """
  if allow_per_logit_weights:
    err_msg = ('weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] '
               'or [D0, D1, ... DN, logits_dimension]')
  else:
    err_msg = 'weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]'
  if weight_column is None:
    return 1.
  values = tuple((features or {}).values()) + (logits,)
  with tf.compat.v1.name_scope('weights', values=values) as scope:
    if isinstance(weight_column, str):
      key, normalizer_fn = weight_column, None
    elif isinstance(weight_column, numeric_column_type()):
      key, normalizer_fn = weight_column.key, weight_column.normalizer_fn
    else:
      raise TypeError('Weight column must be either a string or '
                      f'NumericColumn. Given type: {type(weight_column)}.')
    weights = _raw_weights(features, key)
    if normalizer_fn is not None:
      weights = normalizer_fn(weights)
    if not (weights.dtype.is_floating or weights.dtype.is_integer):
      raise ValueError('Weight column should be castable to float. '
                       f'Given dtype: {weights.dtype}')
    weights = tf.cast(weights, name='weights', dtype=tf.float32)
    if tf.executing_eagerly():
      weights_shape, logits_shape = _shape(weights), _shape(logits)
      mismatch = ValueError(f'{err_msg}, logits_shape: {logits_shape}. '
                            f'weights_shape: {weights_shape}.')
      if len(weights_shape) == len(logits_shape) - 1:
        if logits_shape[:-1] != weights_shape:
          raise mismatch
        return tf.expand_dims(weights, -1)
      allowed = [logits_shape[:-1] + (1,)]
      if allow_per_logit_weights:
        allowed.append(logits_shape)
      if weights_shape not in allowed:
        raise mismatch
      return weights
    weights_shape = tf.compat.v1.shape(weights, name='weights_shape')
    logits_shape = tf.compat.v1.shape(logits, name='logits_shape')
    data = ['logits_shape: ', logits_shape, 'weights_shape: ', weights_shape]
    if (weights.shape.ndims is not None and logits.shape.ndims is not None
        and weights.shape.ndims == logits.shape.ndims - 1):
      check = tf.compat.v1.debugging.assert_equal(
          logits_shape[:-1], weights_shape, message=err_msg, data=data)
      with tf.control_dependencies([check]):
        return tf.expand_dims(weights, -1, name=scope)
    one_per_example = tf.concat([logits_shape[:-1], [1]], axis=0)
    if allow_per_logit_weights:
      matches = tf.math.reduce_any([
          tf.reduce_all(tf.math.equal(logits_shape, weights_shape)),
          tf.reduce_all(tf.math.equal(one_per_example, weights_shape))])
      check = tf.debugging.Assert(matches, data=[err_msg] + data)
    else:
      check = tf.compat.v1.debugging.assert_equal(
          one_per_example, weights_shape, message=err_msg, data=data)
    with tf.control_dependencies([check]):
      return tf.identity(weights, name=scope)


def check_logits_final_dim(logits, expected_logits_dimension):
  """logits as float32, checked to be [D0, D1, ... DN, expected dim]."""
  with tf.compat.v1.name_scope('logits', values=(logits,)) as scope:
    logits = tf.cast(logits, tf.float32)
    if tf.executing_eagerly():
      shape = _shape(logits)
      if len(shape) < 2:
        raise ValueError('logits must have rank at least 2.  Received rank '
                         f'{len(shape)}, shape {shape}')
      if (isinstance(expected_logits_dimension, int) and
          shape[-1] != expected_logits_dimension):
        raise ValueError(f'{_LOGITS_SHAPE_ERR_MSG}, got {shape}.')
      return logits
    dynamic_shape = tf.compat.v1.shape(logits)
    rank_check = tf.compat.v1.debugging.assert_rank_at_least(
        logits, 2, data=[dynamic_shape], message=_LOGITS_SHAPE_ERR_MSG)
    with tf.control_dependencies([rank_check]):
      static = logits.shape
      if static.ndims is not None and static[-1] is not None:
        if (isinstance(expected_logits_dimension, int) and
            static[-1] != expected_logits_dimension):
          raise ValueError(f'{_LOGITS_SHAPE_ERR_MSG}, got {static}.')
        return logits
      dim_check = tf.compat.v1.debugging.assert_equal(
          expected_logits_dimension, dynamic_shape[-1],
          data=[dynamic_shape], message=_LOGITS_SHAPE_ERR_MSG)
      with tf.control_dependencies([dim_check]):
        return tf.identity(logits, name=scope)


def validate_loss_fn_args(loss_fn):
  """ValueError unless loss_fn takes labels and logits, and at most also
  features and loss_reduction."""
  args = estimator_calls.fn_args(loss_fn)
  for required in ('labels', 'logits'):
    if required not in args:
      raise ValueError(f'loss_fn must contain argument: {required}. '
                       f'Given arguments: {args}')
  unexpected = list(
      set(args) - {'labels', 'logits', 'features', 'loss_reduction'})
  if unexpected:
    raise ValueError(f'loss_fn has unexpected args: {unexpected}')


def validate_loss_reduction(loss_reduction):
  """ValueError unless a tf.losses.Reduction other than NONE."""
  if (loss_reduction not in tf.losses.Reduction.all() or
      loss_reduction == tf.losses.Reduction.NONE):
    raise ValueError(
        f'Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` '
        'for valid options.')


def validate_update_ops(update_ops=None):
  if update_ops is not None and not isinstance(update_ops, (list, tuple)):
    raise ValueError(
        _VALIDATION_ERROR_MSG.format('update_ops', type(update_ops)))


def validate_v2_optimizer(optimizer):
  """ValueError unless a tf.keras optimizer (current or legacy)."""
  optimizers = tf.keras.optimizers
  if not isinstance(optimizer, (optimizers.Optimizer,
                                optimizers.legacy.Optimizer)):
    raise ValueError(
        'The given optimizer is not a tf.keras.optimizers.Optimizer '
        f'instance. Received optimizer of type {type(optimizer)}')


def validate_trainable_variables(trainable_variables=None):
  if trainable_variables is None:
    raise ValueError('trainable_variables cannot be None. Given '
                     f'{trainable_variables}')
  if not isinstance(trainable_variables, (list, tuple)):
    raise ValueError(_VALIDATION_ERROR_MSG.format(
        'trainable_variables', type(trainable_variables)))


def validate_n_classes(n_classes):
  """n_classes unchanged; ValueError for a Python int <= 2."""
  if isinstance(n_classes, int) and n_classes <= 2:
    raise ValueError(f'n_classes must be > 2: {n_classes}.')
  return n_classes


def call_loss_fn(loss_fn, labels, logits, features, expected_loss_dim=1):
  """loss_fn(labels=, logits=[, features=]) checked to have the shape
  logits.shape[:-1] + [expected_loss_dim]."""
  kwargs = {}
  if 'features' in estimator_calls.fn_args(loss_fn):
    kwargs['features'] = features
  values = [labels, logits] + list((features or {}).values())
  with tf.compat.v1.name_scope('call_loss_fn', values=values):
    loss = loss_fn(labels=labels, logits=logits, **kwargs)
    message = ('loss_fn must return Tensor of shape '
               f'[D0, D1, ... DN, {expected_loss_dim}]. ')
    if tf.executing_eagerly():
      loss_shape = _shape(tf.convert_to_tensor(loss))
      logits_shape = _shape(logits)
      if loss_shape != logits_shape[:-1] + (expected_loss_dim,):
        raise ValueError(message, 'logits_shape: ', logits_shape,
                         'loss_shape: ', loss_shape)
      return loss
    logits_shape = tf.compat.v1.shape(logits, name='logits_shape')
    expected = tf.concat([logits_shape[:-1], [expected_loss_dim]], axis=0,
                         name='expected_loss_shape')
    loss_shape = tf.compat.v1.shape(loss, name='loss_shape')
    check = tf.debugging.Assert(
        tf.reduce_all(tf.math.equal(loss_shape, expected)),
        data=[message, 'logits_shape: ', logits_shape, 'loss_shape: ',
              loss_shape],
        name='check_loss_shape')
    with tf.control_dependencies([check]):
      return tf.identity(loss)


def check_prediction_keys(pred_keys, valid_keys):
  for key in pred_keys:
    if key not in valid_keys:
      raise ValueError(f'Prediction key must be in PredictionKeys, given: '
                       f'{key}.Valid prediction keys include {valid_keys}.')


def all_class_ids(logits, n_classes):
  """[batch_size, n_classes] int32: 0 ... n_classes - 1 on every row."""
  batch_size = tf.compat.v1.shape(logits)[0]
  return tf.tile(tf.expand_dims(tf.range(n_classes), 0), [batch_size, 1])


def all_classes(logits, n_classes, label_vocabulary=None):
  """[batch_size, n_classes] strings: the class names (the vocabulary, or
  the class ids as strings) on every row."""
  batch_size = tf.compat.v1.shape(logits)[0]
  if label_vocabulary:
    classes = tf.convert_to_tensor([label_vocabulary])
  else:
    classes = tf.strings.as_string(tf.expand_dims(tf.range(n_classes), 0))
  return tf.tile(classes, [batch_size, 1])


def classification_output(scores, n_classes, label_vocabulary=None):
  """A ClassificationOutput of `scores` with every class name."""
  return facade_private.ClassificationOutput(
      scores=scores,
      classes=all_classes(scores, n_classes, label_vocabulary))


def check_label_range(labels, n_classes, message=None):
  """labels, checked to be in [0, n_classes - 1] (ValueError eagerly; in a
  TF1 graph the check runs with the labels, InvalidArgumentError)."""
  with tf.compat.v1.name_scope('check_label_range', values=(labels,)):
    labels = tf.convert_to_tensor(labels)
    if tf.executing_eagerly():
      if not tf.reduce_all(tf.math.less_equal(labels, n_classes - 1)):
        raise ValueError(message or f'Labels must be <= {n_classes} - 1')
      if not tf.reduce_all(tf.math.greater_equal(labels, 0)):
        raise ValueError(message or 'Labels must be >= 0')
      return labels
    at_most = tf.compat.v1.debugging.assert_less_equal(
        labels, tf.convert_to_tensor(n_classes - 1, dtype=labels.dtype),
        message=message or 'Labels must be <= n_classes - 1')
    at_least = tf.compat.v1.debugging.assert_non_negative(
        labels, message=message or 'Labels must be >= 0')
    return _assert_all((at_most, at_least), labels)


def update_metric_with_broadcast_weights(eval_metric, values, weights):
  """eval_metric.update_state(values as float32, weights broadcast to
  them)."""
  values = tf.cast(values, dtype=tf.float32)
  if weights is not None:
    weights = keras_losses.broadcast_weights(weights, values)
  eval_metric.update_state(values=values, sample_weight=weights)


def create_eval_metrics_tuple(fn, kwargs):
  """TPUEstimatorSpec's eval_metrics (metric_fn, tensors) calling
  fn(**kwargs): the Tensor kwargs are passed as tensors, the others bound."""
  tensors = {k: v for k, v in kwargs.items() if tf.is_tensor(v)}
  others = {k: v for k, v in kwargs.items() if not tf.is_tensor(v)}

  def metric_fn(**given):
    return fn(**dict(others, **given))

  return metric_fn, tensors


def create_estimator_spec_train_op(
    head_name, optimizer=None, trainable_variables=None, train_op_fn=None,
    update_ops=None, regularized_training_loss=None,
    loss_reduction=tf.losses.Reduction.SUM_OVER_BATCH_SIZE):
  """The train op, in name scope 'training': optimizer.get_updates(loss,
  trainable_variables)[0] (the loss divided by the replica count for a mean
  reduction) or train_op_fn(loss); grouped with update_ops."""
  del head_name
  validate_update_ops(update_ops)
  with tf.compat.v1.name_scope(''), tf.compat.v1.name_scope('training'):
    loss = regularized_training_loss
    if optimizer is not None:
      if train_op_fn is not None:
        raise ValueError('train_op_fn and optimizer cannot both be set.')
      validate_v2_optimizer(optimizer)
      validate_trainable_variables(trainable_variables)
      if loss_reduction == tf.losses.Reduction.SUM_OVER_BATCH_SIZE:
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        if replicas > 1:
          loss *= (1. / replicas)
      train_op = optimizer.get_updates(loss, trainable_variables)[0]
    elif train_op_fn is not None:
      train_op = train_op_fn(loss)
    else:
      raise ValueError('train_op_fn and optimizer cannot both be None.')
    if update_ops is not None:
      train_op = tf.group(train_op, *update_ops)
    return train_op


def create_estimator_spec_summary(regularized_training_loss,
                                  regularization_losses=None,
                                  summary_key_fn=None):
  """Scalar summaries (tf.compat.v1, top name scope) of the loss and the
  summed regularization losses, keyed by summary_key_fn(metric key)."""
  key = summary_key_fn or (lambda k: k)
  keys = metric_keys.MetricKeys
  with tf.compat.v1.name_scope(''):
    tf.compat.v1.summary.scalar(key(keys.LOSS), regularized_training_loss)
    if regularization_losses is not None:
      tf.compat.v1.summary.scalar(key(keys.LOSS_REGULARIZATION),
                                  tf.math.add_n(regularization_losses))


def regularized_loss(training_loss, regularization_losses):
  """training_loss plus the sum of regularization_losses (if given)."""
  if regularization_losses is None:
    return training_loss
  return training_loss + tf.math.add_n(regularization_losses)


class VocabularyTables:
  """The lookup tables between a label vocabulary and class ids.

  Eagerly, each table is made once and kept; in a graph, a new table is
  made at each use, in the graph being built (Estimator builds a new graph
  for each of train, evaluate and predict).
  """

  def __init__(self, vocabulary):
    self._vocabulary = tuple(vocabulary)
    self._eager_tables = {}

  def _table(self, kind, make):
    if not tf.executing_eagerly():
      return make()
    if kind not in self._eager_tables:
      self._eager_tables[kind] = make()
    return self._eager_tables[kind]

  def class_ids(self, labels):
    """The id (int64; -1 if not in the vocabulary) of each string label."""
    def make():
      # Scopes and names as lookup_ops.index_table_from_tensor's.
      with tf.compat.v1.name_scope(None, 'class_id_lookup'):
        keys = tf.convert_to_tensor(self._vocabulary)
        ids = tf.cast(tf.range(tf.size(keys)), tf.int64)
        with tf.compat.v1.name_scope(None, 'hash_table'):
          return tf.compat.v1.lookup.StaticHashTable(
              tf.lookup.KeyValueTensorInitializer(
                  keys, ids, tf.string, tf.int64, name='table_init'),
              default_value=-1)
    return self._table('ids', make).lookup(labels)

  def class_names(self, class_ids):
    """The vocabulary entry ('UNK' if none) of each int64 class id."""
    def make():
      # Scopes and names as lookup_ops.index_to_string_table_from_tensor's.
      with tf.compat.v1.name_scope(None, 'class_string_lookup'):
        names = tf.convert_to_tensor(self._vocabulary, tf.string)
        ids = tf.cast(tf.range(tf.size(names)), tf.int64)
        return tf.compat.v1.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                ids, names, tf.int64, tf.string, name='table_init'),
            default_value='UNK')
    return self._table('names', make).lookup(class_ids)


def prediction_keys_to_make(keys, valid_keys):
  """The prediction keys asked for (all valid ones when none are), checked."""
  if keys:
    check_prediction_keys(keys, valid_keys)
    return keys
  return valid_keys


PredictionKeys = prediction_keys.PredictionKeys
MetricKeys = metric_keys.MetricKeys
