"""DNN Estimators: tf.estimator.DNNClassifier, DNNRegressor, DNNEstimator,
their v1 forms, and the DNN logit_fn builders.

Same model, variables, summaries and training as tensorflow_estimator 2.15:
a Keras model named 'dnn' of an input layer over the feature columns
(dnn/input_from_feature_columns/input_layer/...), Dense hidden layers
hiddenlayer_N (glorot-uniform kernels, activation_fn; dropout only when
training; batch normalization, momentum 0.999, after each when batch_norm)
and a linear `logits` layer. Each hidden layer and the logits log
`<layer>/fraction_of_zero_values` and an `<layer>/activation` histogram.
  * v2 (tf.estimator.*): v2 columns only, Keras layers, a Keras legacy
    optimizer (default 'Adagrad' at its own default learning rate) whose
    `iterations` is global_step; loss reduced SUM_OVER_BATCH_SIZE.
  * v1 (tf.compat.v1.estimator.*): v1 or v2 columns, tf.compat.v1.layers under
    variable_scope('dnn') with a min-max partitioner (one partition per ps
    task; the input layer in 64 MB slices unless input_layer_partitioner is
    given); a tf.compat.v1.train optimizer (default 'Adagrad' at 0.05); v1
    heads, loss reduced SUM.
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

# tensorflow_estimator's learning rate of a v1 DNN's named optimizer.
_LEARNING_RATE = 0.05

_V1_COLUMNS_IN_V2 = (
    'Received a feature column from TensorFlow v1, but this is a TensorFlow '
    'v2 Estimator. Please either use v2 feature columns (accessible via '
    'tf.feature_column.* in TF 2.x) with this Estimator, or switch to a v1 '
    'Estimator for use with v1 feature columns (accessible via '
    'tf.compat.v1.estimator.* and tf.compat.v1.feature_column.*, '
    'respectively.')


def _layer_summaries(value, tag):
  tf.compat.v1.summary.scalar(f'{tag}/fraction_of_zero_values',
                              tf.math.zero_fraction(value))
  tf.compat.v1.summary.histogram(f'{tag}/activation', value)


def _check_units(units):
  if not isinstance(units, int):
    raise ValueError(f'units must be an int.  Given type: {type(units)}')


def _call_input_layer(layer, features, training):
  try:
    return layer(features, training=training)
  except TypeError:  # An input layer whose call takes no `training`.
    return layer(features)


class _DNNModel(tf.keras.Model):
  """The v1 DNN: tf.compat.v1.layers in variable scopes (build it inside
  the `dnn` variable scope; its variables follow its partitioners)."""

  def __init__(self, units, hidden_units, feature_columns, activation_fn,
               dropout, input_layer_partitioner, batch_norm, name=None,
               **kwargs):
    super().__init__(name=name, **kwargs)
    if canned_private.is_v2(feature_columns):
      self._input_layer = tf.compat.v1.keras.layers.DenseFeatures(
          feature_columns=feature_columns, name='input_layer')
    else:
      self._input_layer = canned_private.InputLayerV1(
          feature_columns=feature_columns, name='input_layer',
          create_scope_now=False)
    self._track(self._input_layer, 'input_layer')
    self._dropout = dropout
    self._batch_norm = batch_norm
    self._input_layer_partitioner = input_layer_partitioner
    # Per hidden layer: (dense, dropout or None, batch norm or None, tag).
    self._hidden = []
    for index, width in enumerate(hidden_units):
      with tf.compat.v1.variable_scope(f'hiddenlayer_{index}') as scope:
        dense = tf.compat.v1.layers.Dense(
            units=width, activation=activation_fn,
            kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
            name=scope, _scope=scope)
        self._track(dense, scope.name)
        drop = norm = None
        if dropout is not None:
          drop = tf.compat.v1.layers.Dropout(rate=dropout)
          self._track(drop, drop.name)
        if batch_norm:
          norm = tf.compat.v1.layers.BatchNormalization(
              momentum=0.999, trainable=True, name=f'batchnorm_{index}',
              _scope=f'batchnorm_{index}')
          self._track(norm, norm.name)
        self._hidden.append((dense, drop, norm, scope.name))
    with tf.compat.v1.variable_scope('logits') as scope:
      self._logits_layer = tf.compat.v1.layers.Dense(
          units=units, activation=None,
          kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
          name=scope, _scope=scope)
      self._track(self._logits_layer, scope.name)
      self._logits_tag = scope.name

  def _track(self, layer, name):
    setattr(self, name, layer)

  def call(self, features, mode):
    training = mode == ModeKeys.TRAIN
    # Build in the scope the model was called from, not in the model's own
    # name scope (as tensorflow_estimator's ops and summaries are named).
    outer = canned_private.current_name_scope().rsplit('/', 1)[0] + '/'
    with tf.compat.v1.name_scope(outer):
      with tf.compat.v1.variable_scope(
          'input_from_feature_columns',
          partitioner=self._input_layer_partitioner):
        net = _call_input_layer(self._input_layer, features, training)
      for dense, drop, norm, tag in self._hidden:
        net = dense(net)
        if drop is not None and training:
          net = drop(net, training=True)
        if norm is not None:
          net = norm(net, training=training)
        _layer_summaries(net, tag)
      logits = self._logits_layer(net)
      _layer_summaries(logits, self._logits_tag)
      return logits


class _DNNModelV2(tf.keras.Model):
  """The v2 DNN: Keras layers named by the name scopes they are made in."""

  def __init__(self, units, hidden_units, feature_columns, activation_fn,
               dropout, batch_norm, name=None, **kwargs):
    super().__init__(name=name, **kwargs)
    with tf.compat.v1.name_scope('input_from_feature_columns') as scope:
      if not canned_private.is_v2(feature_columns):
        raise ValueError(_V1_COLUMNS_IN_V2)
      self._input_layer = tf.keras.layers.DenseFeatures(
          feature_columns=feature_columns, name=scope + 'input_layer')
    self._dropout = dropout
    self._batch_norm = batch_norm
    self._hidden_layers, self._dropout_layers = [], []
    self._batch_norm_layers, self._hidden_tags = [], []
    for index, width in enumerate(hidden_units):
      with tf.compat.v1.name_scope(f'hiddenlayer_{index}') as scope:
        tag = scope.rstrip('/')
        self._hidden_tags.append(tag)
        self._hidden_layers.append(tf.keras.layers.Dense(
            units=width, activation=activation_fn,
            kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
            name=tag))
        if dropout is not None:
          self._dropout_layers.append(tf.keras.layers.Dropout(rate=dropout))
        if batch_norm:
          self._batch_norm_layers.append(tf.keras.layers.BatchNormalization(
              momentum=0.999, trainable=True,
              name=f'{tag}/batchnorm_{index}'))
    with tf.compat.v1.name_scope('logits') as scope:
      self._logits_tag = scope.rstrip('/')
      self._logits_layer = tf.keras.layers.Dense(
          units=units, activation=None,
          kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
          name=self._logits_tag)

  def call(self, features, mode):
    training = mode == ModeKeys.TRAIN
    net = _call_input_layer(self._input_layer, features, training)
    for index, layer in enumerate(self._hidden_layers):
      net = layer(net)
      if self._dropout is not None and training:
        net = self._dropout_layers[index](net, training=True)
      if self._batch_norm:
        net = self._batch_norm_layers[index](net, training=training)
      _layer_summaries(net, self._hidden_tags[index])
    logits = self._logits_layer(net)
    _layer_summaries(logits, self._logits_tag)
    return logits


def dnn_logit_fn_builder(units, hidden_units, feature_columns, activation_fn,
                         dropout, input_layer_partitioner, batch_norm):
  """tf.compat.v1.estimator.experimental.dnn_logit_fn_builder: a
  logit_fn(features, mode) of the v1 DNN named 'dnn'."""
  _check_units(units)

  def dnn_logit_fn(features, mode):
    model = _DNNModel(units, hidden_units, feature_columns, activation_fn,
                      dropout, input_layer_partitioner, batch_norm,
                      name='dnn')
    return model(features, mode)

  return dnn_logit_fn


def dnn_logit_fn_builder_v2(units, hidden_units, feature_columns,
                            activation_fn, dropout, batch_norm):
  """A logit_fn(features, mode) of the v2 DNN named 'dnn'."""
  _check_units(units)

  def dnn_logit_fn(features, mode):
    model = _DNNModelV2(units, hidden_units, feature_columns, activation_fn,
                        dropout, batch_norm, name='dnn')
    return model(features, mode)

  return dnn_logit_fn


def _validate_features(features):
  if not isinstance(features, dict):
    raise ValueError('features should be a dictionary of `Tensor`s. Given '
                     f'type: {type(features)}')


def _dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns,
                  optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
                  input_layer_partitioner=None, config=None, use_tpu=False,
                  batch_norm=False):
  """The v1 DNN Estimators' model_fn (on TPU: a _TPUEstimatorSpec, no
  partitioning)."""
  optimizer = optimizers.get_optimizer_instance(
      optimizer, learning_rate=_LEARNING_RATE)
  _validate_features(features)
  ps_tasks = config.num_ps_replicas if config else 0
  partitioner = None if use_tpu else (
      tf.compat.v1.min_max_variable_partitioner(max_partitions=ps_tasks))
  with tf.compat.v1.variable_scope('dnn', values=tuple(features.values()),
                                   partitioner=partitioner):
    input_layer_partitioner = input_layer_partitioner or (
        None if use_tpu else tf.compat.v1.min_max_variable_partitioner(
            max_partitions=ps_tasks, min_slice_size=64 << 20))
    logits = dnn_logit_fn_builder(
        units=head.logits_dimension, hidden_units=hidden_units,
        feature_columns=feature_columns, activation_fn=activation_fn,
        dropout=dropout, input_layer_partitioner=input_layer_partitioner,
        batch_norm=batch_norm)(features=features, mode=mode)
    spec_fn = (head._create_tpu_estimator_spec if use_tpu  # pylint: disable=protected-access
               else head.create_estimator_spec)
    return spec_fn(features=features, mode=mode, labels=labels,
                   optimizer=optimizer, logits=logits)


def _dnn_model_fn_builder_v2(units, hidden_units, feature_columns,
                             activation_fn, dropout, batch_norm, features,
                             mode):
  """(logits, trainable variables, update ops) of the v2 DNN."""
  _check_units(units)
  model = _DNNModelV2(units, hidden_units, feature_columns, activation_fn,
                      dropout, batch_norm, name='dnn')
  logits = model(features, mode)
  return logits, model.trainable_variables, model.updates


def dnn_model_fn_v2(features, labels, mode, head, hidden_units,
                    feature_columns, optimizer='Adagrad',
                    activation_fn=tf.nn.relu, dropout=None, config=None,
                    use_tpu=False, batch_norm=False):
  """The v2 DNN Estimators' model_fn."""
  _validate_features(features)
  del config
  logits, variables, update_ops = _dnn_model_fn_builder_v2(
      units=head.logits_dimension, hidden_units=hidden_units,
      feature_columns=feature_columns, activation_fn=activation_fn,
      dropout=dropout, batch_norm=batch_norm, features=features, mode=mode)
  if mode == ModeKeys.TRAIN:
    optimizer = optimizers.get_optimizer_instance_v2(optimizer)
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  spec_fn = (head._create_tpu_estimator_spec if use_tpu  # pylint: disable=protected-access
             else head.create_estimator_spec)
  return spec_fn(features=features, mode=mode, labels=labels,
                 optimizer=optimizer, logits=logits,
                 trainable_variables=variables, update_ops=update_ops)


def _v2_model_fn(head, hidden_units, feature_columns, optimizer,
                 activation_fn, dropout, batch_norm):
  def _model_fn(features, labels, mode, config):
    return dnn_model_fn_v2(
        features=features, labels=labels, mode=mode, head=head,
        hidden_units=hidden_units,
        feature_columns=tuple(feature_columns or []), optimizer=optimizer,
        activation_fn=activation_fn, dropout=dropout, config=config,
        batch_norm=batch_norm)
  return _model_fn


def _v1_model_fn(head, hidden_units, feature_columns, optimizer,
                 activation_fn, dropout, input_layer_partitioner, batch_norm):
  def _model_fn(features, labels, mode, config):
    return _dnn_model_fn(
        features=features, labels=labels, mode=mode, head=head,
        hidden_units=hidden_units,
        feature_columns=tuple(feature_columns or []), optimizer=optimizer,
        activation_fn=activation_fn, dropout=dropout,
        input_layer_partitioner=input_layer_partitioner, config=config,
        batch_norm=batch_norm)
  return _model_fn




class DNNClassifierV2(estimator.EstimatorV2):
  """tf.estimator.DNNClassifier: a DNN of n_classes classes."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               n_classes=2, weight_column=None, label_vocabulary=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               config=None, warm_start_from=None,
               loss_reduction=_SUM_OVER_BATCH_SIZE, batch_norm=False):
    head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column,
        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    super().__init__(
        model_fn=_v2_model_fn(head, hidden_units, feature_columns, optimizer,
                              activation_fn, dropout, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNClassifier(estimator.Estimator):
  """tf.compat.v1.estimator.DNNClassifier (v1 head, loss SUM)."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               n_classes=2, weight_column=None, label_vocabulary=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=_SUM, batch_norm=False):
    head = head_v1._binary_logistic_or_multi_class_head(  # pylint: disable=protected-access
        n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(
        model_fn=_v1_model_fn(head, hidden_units, feature_columns, optimizer,
                              activation_fn, dropout,
                              input_layer_partitioner, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNEstimatorV2(estimator.EstimatorV2):
  """tf.estimator.DNNEstimator: a DNN with the given head."""

  def __init__(self, head, hidden_units, feature_columns, model_dir=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               config=None, warm_start_from=None, batch_norm=False):
    super().__init__(
        model_fn=_v2_model_fn(head, hidden_units, feature_columns, optimizer,
                              activation_fn, dropout, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNEstimator(estimator.Estimator):
  """tf.compat.v1.estimator.DNNEstimator (a v1 head)."""

  def __init__(self, head, hidden_units, feature_columns, model_dir=None,
               optimizer='Adagrad', activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, batch_norm=False):
    super().__init__(
        model_fn=_v1_model_fn(head, hidden_units, feature_columns, optimizer,
                              activation_fn, dropout,
                              input_layer_partitioner, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressorV2(estimator.EstimatorV2):
  """tf.estimator.DNNRegressor: a DNN of label_dimension outputs, mean
  squared error loss."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               label_dimension=1, weight_column=None, optimizer='Adagrad',
               activation_fn=tf.nn.relu, dropout=None, config=None,
               warm_start_from=None, loss_reduction=_SUM_OVER_BATCH_SIZE,
               batch_norm=False):
    head = regression_head.RegressionHead(
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction)
    super().__init__(
        model_fn=_v2_model_fn(head, hidden_units, feature_columns, optimizer,
                              activation_fn, dropout, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(estimator.Estimator):
  """tf.compat.v1.estimator.DNNRegressor (v1 head, loss SUM)."""

  def __init__(self, hidden_units, feature_columns, model_dir=None,
               label_dimension=1, weight_column=None, optimizer='Adagrad',
               activation_fn=tf.nn.relu, dropout=None,
               input_layer_partitioner=None, config=None,
               warm_start_from=None, loss_reduction=_SUM, batch_norm=False):
    head = head_v1._regression_head(  # pylint: disable=protected-access
        label_dimension=label_dimension, weight_column=weight_column,
        loss_reduction=loss_reduction)
    super().__init__(
        model_fn=_v1_model_fn(head, hidden_units, feature_columns, optimizer,
                              activation_fn, dropout,
                              input_layer_partitioner, batch_norm),
        model_dir=model_dir, config=config, warm_start_from=warm_start_from)
