"""Turns a network builder into a TPUEstimator image-classification model_fn."""

import tensorflow as tf

from model_fn import metrics
from model_fn import optimization
from model_fn import precision
from model_fn import summaries
from model_fn import warm_start
from model_fn.spec import ModeKeys
from model_fn.spec import TPUEstimatorSpec

IMAGE_KEY = 'image'


def _images(features):
  if isinstance(features, dict):
    if IMAGE_KEY not in features:
      raise ValueError(f'features has no {IMAGE_KEY!r} key; keys: '
                       f'{sorted(features)}.')
    return features[IMAGE_KEY]
  return features


def cross_entropy(labels, logits, num_classes, label_smoothing=0.0):
  """Mean softmax cross-entropy in float32 with optional label smoothing."""
  onehot = tf.one_hot(tf.cast(labels, tf.int32), num_classes,
                      dtype=tf.float32)
  if label_smoothing:
    onehot = onehot * (1.0 - label_smoothing) + label_smoothing / num_classes
  return tf.reduce_mean(
      tf.nn.softmax_cross_entropy_with_logits(labels=onehot, logits=logits))


def build_classifier_model_fn(network):
  """Returns model_fn(features, labels, mode, params) around `network`.

  `network(images, is_training, params)` returns logits. The model_fn runs it
  in the configured precision, casts logits to float32, and returns a
  TPUEstimatorSpec: predictions in PREDICT; loss, train_op (with UPDATE_OPS)
  and host_call in TRAIN; loss and eval_metrics in EVAL. scaffold_fn
  warm-starts from params['init_checkpoint'] when set.
  """

  def model_fn(features, labels, mode, params):
    is_training = mode == ModeKeys.TRAIN
    images = _images(features)
    with precision.precision_scope(params):
      images = tf.cast(images, precision.compute_dtype(params))
      logits = network(images, is_training, params)
    logits = tf.cast(logits, tf.float32)
    model_variables = tf.compat.v1.global_variables()

    if mode == ModeKeys.PREDICT:
      predictions = {
          'classes': tf.argmax(logits, axis=-1, output_type=tf.int32),
          'probabilities': tf.nn.softmax(logits),
      }
      return TPUEstimatorSpec(mode=mode, predictions=predictions)

    num_classes = logits.shape[-1]
    loss = cross_entropy(labels, logits, num_classes,
                         params.get('label_smoothing', 0.0))
    loss += optimization.weight_decay_loss(params)

    scaffold_fn = None
    if params.get('init_checkpoint'):
      scaffold_fn = warm_start.make_scaffold_fn(
          params['init_checkpoint'],
          [v for v in model_variables if 'global_step' not in v.name])

    if mode == ModeKeys.EVAL:
      return TPUEstimatorSpec(
          mode=mode, loss=loss, scaffold_fn=scaffold_fn,
          eval_metrics=(metrics.classification_metric_fn, [labels, logits]))

    global_step = tf.compat.v1.train.get_or_create_global_step()
    learning_rate = optimization.learning_rate_schedule(global_step, params)
    optimizer = optimization.make_optimizer(learning_rate, params)
    update_ops = tf.compat.v1.get_collection(
        tf.compat.v1.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
      train_op = optimizer.minimize(loss, global_step=global_step)
    return TPUEstimatorSpec(
        mode=mode, loss=loss, train_op=train_op, scaffold_fn=scaffold_fn,
        host_call=summaries.make_host_call(params, global_step, loss,
                                           learning_rate))

  return model_fn
