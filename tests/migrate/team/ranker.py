"""A team's own model, written as teams outside this repository wrote them.

Not in the project's style on purpose (tests/migrate/migrate_test.py
migrates it): a class whose instance is the model_fn, hyperparameters as
attributes, `get_variable` under `variable_scope(AUTO_REUSE)` next to
`tf.compat.v1.layers` and a tf-keras layer built inside the model_fn,
dropout, batch norm with UPDATE_OPS, Adam on an exponential decay with
gradients clipped by global norm (compute_gradients / apply_gradients),
an EstimatorSpec with `eval_metric_ops`, two export signatures and a
serving input function of its own.
"""

import numpy as np
import tensorflow.compat.v1 as tf


class Ranker(object):

  def __init__(self, hidden=16, classes=3, clip=1.0):
    self.hidden, self.classes, self.clip = hidden, classes, clip

  def tower(self, x, training):
    with tf.variable_scope('tower', reuse=tf.AUTO_REUSE):
      w = tf.get_variable('w', [x.shape[-1], self.hidden],
                          initializer=tf.glorot_uniform_initializer())
      b = tf.get_variable('b', [self.hidden],
                          initializer=tf.zeros_initializer())
      h = tf.nn.relu(tf.matmul(x, w) + b)
      h = tf.layers.batch_normalization(h, training=training, name='bn')
      h = tf.layers.dropout(h, rate=0.25, training=training)
      h = tf.keras.layers.Dense(self.hidden, activation='tanh',
                                name='mix')(h)
    return h

  def __call__(self, features, labels, mode, params):
    training = mode == tf.estimator.ModeKeys.TRAIN
    x = tf.concat([features['x'], tf.cast(features['bucket'], tf.float32)],
                  axis=1)
    h = self.tower(x, training)
    logits = tf.layers.dense(h, self.classes, name='logits')
    score = tf.squeeze(tf.layers.dense(h, 1, name='score'), axis=1)
    predictions = {'class': tf.argmax(logits, 1),
                   'probabilities': tf.nn.softmax(logits), 'score': score}
    if mode == tf.estimator.ModeKeys.PREDICT:
      return tf.estimator.EstimatorSpec(
          mode, predictions=predictions,
          export_outputs={
              'serving_default': tf.estimator.export.PredictOutput(
                  predictions),
              'score': tf.estimator.export.RegressionOutput(score)})
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    loss += 0.1 * tf.reduce_mean(tf.square(score))
    if mode == tf.estimator.ModeKeys.EVAL:
      return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
          'accuracy': tf.metrics.accuracy(labels, predictions['class']),
          'score_mean': tf.metrics.mean(score),
          'score_rmse': tf.metrics.root_mean_squared_error(
              tf.zeros_like(score), score)})
    step = tf.train.get_or_create_global_step()
    rate = tf.train.exponential_decay(params['learning_rate'], step, 5, 0.5)
    optimizer = tf.train.AdamOptimizer(rate)
    grads, variables = zip(*optimizer.compute_gradients(loss))
    grads, _ = tf.clip_by_global_norm(grads, self.clip)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
      train_op = optimizer.apply_gradients(zip(grads, variables),
                                           global_step=step)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


model_fn = Ranker()


def input_fn(params):
  rng = np.random.RandomState(7 if params['mode'] == 'train' else 8)
  n = 64
  x = rng.normal(size=(n, 4)).astype(np.float32)
  bucket = rng.randint(0, 3, size=(n, 1)).astype(np.int64)
  y = (x[:, 0] > 0).astype(np.int64) + (bucket[:, 0] > 1)
  ds = tf.data.Dataset.from_tensor_slices(({'x': x, 'bucket': bucket}, y))
  if params['mode'] == 'train':
    ds = ds.repeat()
  return ds.batch(params['batch_size'], drop_remainder=True)


def serving_input_fn():
  x = tf.placeholder(tf.float32, [None, 4], name='x')
  bucket = tf.placeholder(tf.int64, [None], name='bucket')
  return tf.estimator.export.ServingInputReceiver(
      {'x': x, 'bucket': tf.expand_dims(bucket, 1)},
      {'x': x, 'bucket': bucket})
