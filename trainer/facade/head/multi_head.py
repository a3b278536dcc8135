"""tf.estimator.MultiHead: several named heads trained together."""

import tensorflow as tf

from trainer.api import specs
from trainer.compat import facade_private
from trainer.facade.head import base_head

_KEYS = base_head.MetricKeys
ModeKeys = specs.ModeKeys


def _no_op_train_fn(loss):
  del loss
  return tf.no_op()


def _default_export_output(export_outputs, head_name):
  """The export output a head serves by default: its only one, or the one
  under the default serving key."""
  if len(export_outputs) == 1:
    return next(iter(export_outputs.values()))
  if base_head.DEFAULT_SERVING_KEY in export_outputs:
    return export_outputs[base_head.DEFAULT_SERVING_KEY]
  raise ValueError(
      f'{head_name} did not specify default export_outputs. Given: '
      f'{export_outputs} Suggested fix: Use one of the heads in tf.estimator, '
      f'or include key {base_head.DEFAULT_SERVING_KEY} in export_outputs.')


class MultiHead(base_head.Head):
  """Merges named heads (multi-objective learning).

  The loss is the (head_weights-weighted) sum of the heads' losses; metrics
  are the heads' own (keys suffixed '/head name') plus 'loss/NAME' of each;
  predictions are keyed (head name, prediction key); the first head is
  served by default. Logits and labels are dicts keyed by head name; logits
  may also be one Tensor, split along its last dimension in head order.
  """

  def __init__(self, heads, head_weights=None):
    if not heads:
      raise ValueError(f'Must specify heads. Given: {heads}')
    if head_weights and len(head_weights) != len(heads):
      raise ValueError(
          'heads and head_weights must have the same size. '
          f'Given len(heads): {len(heads)}. Given len(head_weights): '
          f'{len(head_weights)}.')
    for head in heads:
      if head.name is None:
        raise ValueError(
            f'All given heads must have name specified. Given: {head}')
    self._heads = tuple(heads)
    self._head_weights = tuple(head_weights) if head_weights else ()
    self._logits_dimension = sum(h.logits_dimension for h in self._heads)
    self._loss_regularization_key = self._summary_key(
        _KEYS.LOSS_REGULARIZATION)
    self._loss_keys = tuple(f'{_KEYS.LOSS}/{h.name}' for h in self._heads)

  @property
  def name(self):
    return '_'.join(h.name for h in self._heads)

  @property
  def logits_dimension(self):
    return self._logits_dimension

  @property
  def loss_reduction(self):
    """The heads' common loss reduction (ValueError if they differ)."""
    reductions = [h.loss_reduction for h in self._heads]
    if len(set(reductions)) > 1:
      raise ValueError('The loss_reduction must be the same for different '
                       f'heads. Given: {reductions}')
    return reductions[0]

  def _split_logits(self, logits):
    """{head name: its slice of the last dimension of `logits`}."""
    with tf.compat.v1.name_scope('split_logits', values=[logits]):
      logits = tf.convert_to_tensor(logits)
      dimensions = [h.logits_dimension for h in self._heads]
      static = logits.shape.as_list()
      if static[-1] is not None and static[-1] != sum(dimensions):
        raise ValueError(
            f'Could not split logits of shape {static!r} among the heads '
            f'with individual logits dimensions: {dimensions!r}. The last '
            f'dimension of the logits tensor should equal {static[-1]} but '
            f'is {sum(dimensions)}.')
      if tf.executing_eagerly():
        batch_shape = tf.constant(static[:-1], dtype=tf.int32)
      else:
        batch_shape = tf.compat.v1.shape(logits)[:-1]
      begin_of_batch = tf.zeros_like(batch_shape)
      all_of_batch = -1 * tf.ones_like(batch_shape)
      split, begin = {}, 0
      for head in self._heads:
        split[head.name] = tf.slice(
            logits, begin=tf.concat([begin_of_batch, [begin]], axis=0),
            size=tf.concat([all_of_batch, [head.logits_dimension]], axis=0))
        begin += head.logits_dimension
    return split

  def _check_logits_and_labels(self, logits, labels=None):
    """The logits dict; ValueError for a head missing from logits or
    labels."""
    names = [h.name for h in self._heads]
    if isinstance(logits, dict):
      missing = list(set(names) - set(logits))
      if missing:
        raise ValueError(f'logits has missing values for head(s): {missing}')
      logits_dict = logits
    else:
      logits_dict = self._split_logits(logits)
    if labels is not None:
      if not isinstance(labels, dict):
        raise ValueError(f'labels must be a dict. Given: {labels}')
      missing = list(set(names) - set(labels))
      if missing:
        raise ValueError(f'labels has missing values for head(s): {missing}')
    return logits_dict

  def loss(self, labels, logits, features=None, mode=None,
           regularization_losses=None):
    logits_dict = self._check_logits_and_labels(logits, labels)
    losses = tuple(
        head.loss(logits=logits_dict[head.name], labels=labels[head.name],
                  features=features, mode=mode) for head in self._heads)
    with tf.compat.v1.name_scope('merge_losses',
                                 values=losses + self._head_weights):
      if self._head_weights:
        losses = [tf.math.multiply(loss, weight)
                  for loss, weight in zip(losses, self._head_weights)]
      return base_head.regularized_loss(tf.math.add_n(losses),
                                        regularization_losses)

  def predictions(self, logits, keys=None):
    """Every head's predictions, keyed (head name, prediction key)."""
    del keys
    logits_dict = self._check_logits_and_labels(logits)
    predictions = {}
    with tf.compat.v1.name_scope('merge_pred'):
      for head in self._heads:
        for key, value in head.predictions(
            logits=logits_dict[head.name]).items():
          predictions[(head.name, key)] = value
    return predictions

  def metrics(self, regularization_losses=None):
    """'loss/NAME' of each head (+ regularization_loss); update_metrics()
    adds the heads' own."""
    eval_metrics = {}
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key] = tf.keras.metrics.Mean(
          name=_KEYS.LOSS_REGULARIZATION)
    with tf.compat.v1.name_scope('merge_eval'):
      for key in self._loss_keys:
        eval_metrics[key] = tf.keras.metrics.Mean(name=key)
    return eval_metrics

  def update_metrics(self, eval_metrics, features, logits, labels,
                     regularization_losses=None):
    logits_dict = self._check_logits_and_labels(logits, labels)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(regularization_losses))
    for head, loss_key in zip(self._heads, self._loss_keys):
      head_logits, head_labels = logits_dict[head.name], labels[head.name]
      eval_metrics[loss_key].update_state(values=head.loss(
          logits=head_logits, labels=head_labels, features=features))
      eval_metrics.update(head.update_metrics(
          head.metrics(), features, head_logits, head_labels) or {})
    return eval_metrics

  def create_estimator_spec(self, features, mode, logits, labels=None,
                            optimizer=None, trainable_variables=None,
                            train_op_fn=None, update_ops=None,
                            regularization_losses=None):
    """The EstimatorSpec of `mode`; see Head.create_estimator_spec.
    regularization_losses regularize the merged loss."""
    with tf.compat.v1.name_scope(self.name, 'multi_head'):
      logits_dict = self._check_logits_and_labels(logits, labels)
      head_specs = [
          head.create_estimator_spec(
              features=features, mode=mode, logits=logits_dict[head.name],
              labels=labels[head.name] if labels else None,
              train_op_fn=_no_op_train_fn)
          for head in self._heads]
      predictions = self.predictions(logits)
      if mode == ModeKeys.PREDICT:
        return specs.EstimatorSpec(
            mode=ModeKeys.PREDICT, predictions=predictions,
            export_outputs=self._merged_export_outputs(head_specs))
      loss = self.loss(labels, logits, features, mode, regularization_losses)
      if mode == ModeKeys.EVAL:
        eval_metrics = self.update_metrics(
            self.metrics(regularization_losses=regularization_losses),
            features, logits, labels,
            regularization_losses=regularization_losses)
        return specs.EstimatorSpec(
            mode=ModeKeys.EVAL, predictions=predictions, loss=loss,
            eval_metric_ops=eval_metrics)
      if mode == ModeKeys.TRAIN:
        train_op = base_head.create_estimator_spec_train_op(
            head_name=self.name, optimizer=optimizer,
            trainable_variables=trainable_variables, train_op_fn=train_op_fn,
            update_ops=update_ops, regularized_training_loss=loss,
            loss_reduction=self.loss_reduction)
        base_head.create_estimator_spec_summary(loss, regularization_losses)
        eval_metric_ops = {}
        for spec in head_specs:
          eval_metric_ops.update(spec.eval_metric_ops or {})
        return specs.EstimatorSpec(
            mode=ModeKeys.TRAIN, loss=loss, train_op=train_op,
            predictions=predictions, eval_metric_ops=eval_metric_ops)
      raise ValueError(f'mode={mode} unrecognized')

  def _merged_export_outputs(self, head_specs):
    """The heads' PREDICT export outputs: the first head's default as the
    default, each head's under 'NAME' (its default) or 'NAME/KEY', and one
    'predict' PredictOutput of every head's predict outputs ('NAME/KEY')."""
    export_outputs = {base_head.DEFAULT_SERVING_KEY: _default_export_output(
        head_specs[0].export_outputs, self._heads[0].name)}
    merged_predict = {}
    for head, spec in zip(self._heads, head_specs):
      for key, output in spec.export_outputs.items():
        if key == base_head.DEFAULT_SERVING_KEY:
          export_outputs[head.name] = output
        else:
          export_outputs[f'{head.name}/{key}'] = output
        if (key == base_head.PREDICT_SERVING_KEY and
            isinstance(output, facade_private.PredictOutput)):
          for name, tensor in output.outputs.items():
            merged_predict[f'{head.name}/{name}'] = tensor
    export_outputs[base_head.PREDICT_SERVING_KEY] = (
        facade_private.PredictOutput(merged_predict))
    return export_outputs
