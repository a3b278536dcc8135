# A model_fn with exponential moving averages, written the way
# tensorflow/tpu's resnet_main.py and efficientnet's main.py write it: EMA
# over a set of variables, applied after the train_op, evaluation on the
# shadow weights through a scaffold_fn's Saver, weight decay filtered by
# variable name, and a host_call writing summaries with its own writer. A
# test fixture for both runners: it is written the legacy way on purpose.
import tensorflow.compat.v1 as tf
from tensorflow.compat.v1 import estimator as tf_estimator
import tensorflow.compat.v2 as tf2

MOVING_AVERAGE_DECAY = 0.9


def get_ema_vars():
  """Get all exponential moving average (ema) variables."""
  ema_vars = tf.trainable_variables() + tf.get_collection('moving_vars')
  for v in tf.global_variables():
    # We maintain mva for batch norm moving mean and variance as well.
    if 'moving_mean' in v.name or 'moving_variance' in v.name:
      ema_vars.append(v)
  return list(set(ema_vars))


def model_fn(features, labels, mode, params):
  is_training = mode == tf_estimator.ModeKeys.TRAIN
  net = tf.reshape(features['image'], [-1, 28 * 28])
  with tf.variable_scope('mlp'):
    net = tf.layers.dense(net, 32, use_bias=False, name='hidden')
    net = tf.layers.batch_normalization(net, training=is_training)
    net = tf.nn.relu(net)
    logits = tf.layers.dense(net, 10, name='logits')
  if mode == tf_estimator.ModeKeys.PREDICT:
    return tf_estimator.tpu.TPUEstimatorSpec(
        mode, predictions={'classes': tf.argmax(logits, axis=1)})

  cross_entropy = tf.losses.sparse_softmax_cross_entropy(labels=labels,
                                                         logits=logits)
  loss = cross_entropy + 1e-4 * tf.add_n([
      tf.nn.l2_loss(v) for v in tf.trainable_variables()
      if 'batch_normalization' not in v.name])

  global_step = tf.train.get_global_step()
  ema = tf.train.ExponentialMovingAverage(decay=MOVING_AVERAGE_DECAY,
                                          num_updates=global_step)
  ema_vars = get_ema_vars()

  host_call = None
  train_op = None
  if mode == tf_estimator.ModeKeys.TRAIN:
    optimizer = tf.train.MomentumOptimizer(0.05, momentum=0.9)
    if params['use_tpu']:
      optimizer = tf.tpu.CrossShardOptimizer(optimizer)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
      train_op = optimizer.minimize(loss, global_step)
    with tf.control_dependencies([train_op]):
      train_op = ema.apply(ema_vars)

    def host_call_fn(gs, loss):
      gs = gs[0]
      with tf2.summary.create_file_writer(
          params['model_dir'],
          max_queue=params['iterations_per_loop']).as_default():
        with tf2.summary.record_if(True):
          tf2.summary.scalar('ema/loss', loss[0], step=gs)
        return tf.summary.all_v2_summary_ops()

    gs_t = tf.reshape(global_step, [1])
    loss_t = tf.reshape(loss, [1])
    host_call = (host_call_fn, [gs_t, loss_t])

  eval_metrics = None
  scaffold_fn = None
  if mode == tf_estimator.ModeKeys.EVAL:
    def metric_fn(labels, logits):
      predictions = tf.argmax(logits, axis=1)
      return {'top_1_accuracy': tf.metrics.accuracy(labels, predictions)}

    eval_metrics = (metric_fn, [labels, logits])
    restore_vars_dict = ema.variables_to_restore(ema_vars)

    def eval_scaffold():
      saver = tf.train.Saver(restore_vars_dict)
      return tf.train.Scaffold(saver=saver)

    scaffold_fn = eval_scaffold

  return tf_estimator.tpu.TPUEstimatorSpec(
      mode=mode, loss=loss, train_op=train_op, host_call=host_call,
      eval_metrics=eval_metrics, scaffold_fn=scaffold_fn)
