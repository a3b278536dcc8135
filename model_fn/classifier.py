"""Turns a network builder into a TPUEstimator image-classification model_fn."""

import tensorflow as tf

from model_fn import layers
from model_fn import losses
from model_fn import metrics
from model_fn import optimization
from model_fn import precision
from model_fn import slicing
from model_fn import summaries
from model_fn import warm_start
from model_fn.spec import ModeKeys
from model_fn.spec import TPUEstimatorSpec

IMAGE_KEY = 'image'
cross_entropy = losses.cross_entropy  # Its historical name here.


def _images(features):
  if isinstance(features, dict):
    if IMAGE_KEY not in features:
      raise ValueError(f'features has no {IMAGE_KEY!r} key; keys: '
                       f'{sorted(features)}.')
    return features[IMAGE_KEY]
  return features


def _logits(network, images, is_training, params):
  """float32 logits of `network` run in the configured precision."""
  with precision.precision_scope(params):
    images = tf.cast(images, precision.compute_dtype(params))
    logits = network(images, is_training, params)
  return tf.cast(logits, tf.float32)


def training_loss(network, images, labels, params):
  """Mean training cross-entropy (without weight decay), float32.

  With --slice=logits the loss comes from the inputs of the network's
  `layers.logits` head, per slice of classes; the full logits the network
  also returns are not needed by the loss or train_op and never run.
  """
  label_smoothing = params['label_smoothing']
  k = slicing.num_slices(params, 'logits')
  if k == 1:
    logits = _logits(network, images, True, params)
    return cross_entropy(labels, logits, logits.shape[-1], label_smoothing)
  with layers.recording_logits_inputs() as heads:
    _logits(network, images, True, params)
  if len(heads) != 1:
    raise ValueError('--slice=logits needs a network with exactly one '
                     f'model_fn.layers.logits head; it built {len(heads)}.')
  features, kernel, bias = heads[0]
  return slicing.sliced_softmax_cross_entropy(features, kernel, bias, labels,
                                              k, label_smoothing)


def _scaffold_fn(params, model_variables):
  if not params['init_checkpoint']:
    return None
  return warm_start.make_scaffold_fn(
      params['init_checkpoint'],
      [v for v in model_variables if 'global_step' not in v.name])


def _train_op(network, images, labels, params, optimizer, global_step):
  """(loss, train_op): one optimizer update for the whole per-core batch.

  With --slice=batch the gradients are accumulated over micro-batches
  (slicing.accumulate_gradients) and applied once.
  """
  k = slicing.num_slices(params, 'batch')
  if k == 1:
    loss = (training_loss(network, images, labels, params) +
            optimization.weight_decay_loss(params))
    grads_and_vars = optimizer.compute_gradients(loss)
  else:
    loss, grads_and_vars = slicing.accumulate_gradients(
        optimizer,
        lambda x, y: training_loss(network, x, y, params),
        [images, labels], k)
    if params['weight_decay']:
      decay = optimization.weight_decay_loss(params)
      decay_grads = dict((v.ref(), g) for g, v in
                         optimizer.compute_gradients(decay) if g is not None)
      grads_and_vars = [(g + decay_grads[v.ref()] if v.ref() in decay_grads
                         else g, v) for g, v in grads_and_vars]
      loss += decay
  update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)
  with tf.control_dependencies(update_ops):
    train_op = optimizer.apply_gradients(grads_and_vars,
                                         global_step=global_step)
  return loss, train_op


def build_classifier_model_fn(network):
  """Returns model_fn(features, labels, mode, params) around `network`.

  `network(images, is_training, params)` returns logits. The model_fn runs it
  in the configured precision, casts logits to float32, and returns a
  TPUEstimatorSpec: predictions in PREDICT; loss, train_op (with UPDATE_OPS)
  and host_call in TRAIN; loss and eval_metrics in EVAL. scaffold_fn
  warm-starts from params['init_checkpoint'] when set. In TRAIN,
  params['num_slices'] / params['slice'] slice the batch or the logits
  (model_fn.slicing); evaluation and prediction are never sliced.
  """

  def model_fn(features, labels, mode, params):
    images = _images(features)
    if labels is not None and params.get('num_classes') and not params.get(
        'use_tpu'):  # A label beyond --num_classes fails, naming the flag.
      labels = losses.checked_labels(labels, params['num_classes'])
    if mode == ModeKeys.TRAIN:
      global_step = tf.compat.v1.train.get_or_create_global_step()
      learning_rate = optimization.learning_rate_schedule(global_step, params)
      optimizer = optimization.make_optimizer(learning_rate, params)
      loss, train_op = _train_op(network, images, labels, params, optimizer,
                                 global_step)
      optimizer_refs = {v.ref() for v in optimizer.variables()}
      model_variables = [v for v in tf.compat.v1.global_variables()
                         if v.ref() not in optimizer_refs]
      return TPUEstimatorSpec(
          mode=mode, loss=loss, train_op=train_op,
          scaffold_fn=_scaffold_fn(params, model_variables),
          host_call=summaries.make_host_call(params, global_step, loss,
                                             learning_rate))

    logits = _logits(network, images, False, params)
    model_variables = tf.compat.v1.global_variables()
    if mode == ModeKeys.PREDICT:
      predictions = {
          'classes': tf.argmax(logits, axis=-1, output_type=tf.int32),
          'probabilities': tf.nn.softmax(logits),
      }
      return TPUEstimatorSpec(mode=mode, predictions=predictions)

    loss = cross_entropy(labels, logits, logits.shape[-1],
                         params['label_smoothing'])
    loss += optimization.weight_decay_loss(params)
    return TPUEstimatorSpec(
        mode=mode, loss=loss, scaffold_fn=_scaffold_fn(params, model_variables),
        eval_metrics=(metrics.classification_metric_fn, [labels, logits]))

  return model_fn
