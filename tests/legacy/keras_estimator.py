"""A model_fn on tf.keras layers returning plain EstimatorSpecs, as teams
wrote them for Estimator and then ran under TPUEstimator(use_tpu=False):
eval_metric_ops mixing tf.compat.v1.metrics and a Keras metric, a
LoggingTensorHook on the loss and the global step, model_fn taking config.
A test fixture for both runners: written the legacy way on purpose."""

import tensorflow as tf

v1 = tf.compat.v1


def model_fn(features, labels, mode, params, config):
  del config  # Taken, as Estimator allows; unused.
  training = mode == tf.estimator.ModeKeys.TRAIN
  images = tf.reshape(features['image'], [-1, 28 * 28])
  hidden = tf.keras.layers.Dense(32, activation='relu', name='hidden')(images)
  hidden = tf.keras.layers.Dropout(0.2)(hidden, training=training)
  logits = tf.keras.layers.Dense(10, name='logits')(hidden)
  predictions = {'classes': tf.argmax(logits, axis=1),
                 'probabilities': tf.nn.softmax(logits)}
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions=predictions)

  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    mean_probability = tf.keras.metrics.Mean(name='mean_probability')
    mean_probability.update_state(tf.reduce_max(predictions['probabilities'],
                                                axis=1))
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
        'accuracy': v1.metrics.accuracy(labels, predictions['classes']),
        'mean_probability': mean_probability})

  global_step = v1.train.get_global_step()
  optimizer = v1.train.AdamOptimizer(params.get('learning_rate', 0.01))
  train_op = optimizer.minimize(loss, global_step=global_step)
  logging_hook = v1.train.LoggingTensorHook(
      {'loss': loss, 'step': global_step}, every_n_iter=5)
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                    training_hooks=[logging_hook])
