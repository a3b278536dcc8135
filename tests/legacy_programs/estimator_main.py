"""Fixture: a plain tf.estimator.Estimator program, written as they were.

TF2-era API (tf.estimator, tf.compat.v1 layers on get_variable), a model_fn
taking (features, labels, mode, params, config) and returning EstimatorSpec
with eval_metric_ops and a LoggingTensorHook in training_hooks,
warm_start_from, a StopAtStepHook, evaluate and a predict loop printing
probabilities.
"""

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

import digits

FLAGS = flags.FLAGS
flags.DEFINE_string('data_dir', None, 'Directory of train-*/validation-*.')
flags.DEFINE_string('model_dir', None, 'Checkpoints and summaries.')
flags.DEFINE_integer('train_steps', 20, 'Steps per train() call.')
flags.DEFINE_integer('batch_size', 32, 'Batch size.')
flags.DEFINE_integer('eval_steps', 3, 'Evaluation batches.')
flags.DEFINE_string('init_checkpoint', None, 'warm_start_from.')
flags.DEFINE_bool('evaluate', True, 'Evaluate after training.')
flags.DEFINE_integer('predict_examples', 3, 'Predictions printed.')


def model_fn(features, labels, mode, params, config):
  del config
  v1 = tf.compat.v1
  with v1.variable_scope('mlp'):
    hidden_w = v1.get_variable('hidden/kernel', [784, 32])
    hidden_b = v1.get_variable('hidden/bias', [32],
                               initializer=v1.zeros_initializer())
    logits_w = v1.get_variable('logits/kernel', [32, 10])
    logits_b = v1.get_variable('logits/bias', [10],
                               initializer=v1.zeros_initializer())
  hidden = tf.nn.relu(tf.matmul(features['image'], hidden_w) + hidden_b)
  logits = tf.matmul(hidden, logits_w) + logits_b
  probabilities = tf.nn.softmax(logits, name='probabilities')
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={
        'class': tf.argmax(logits, 1), 'probabilities': probabilities})
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  loss = tf.identity(loss, name='fixture_loss')
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
        'accuracy': v1.metrics.accuracy(labels, tf.argmax(logits, 1))})
  optimizer = v1.train.AdamOptimizer(params['learning_rate'])
  train_op = optimizer.minimize(loss, v1.train.get_global_step())
  logging_hook = tf.estimator.LoggingTensorHook(
      {'fixture_loss': loss, 'fixture_step': v1.train.get_global_step()},
      every_n_iter=1)
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                    training_hooks=[logging_hook])


def main(argv):
  del argv
  config = tf.estimator.RunConfig(model_dir=FLAGS.model_dir,
                                  save_checkpoints_steps=10,
                                  tf_random_seed=1)
  estimator = tf.estimator.Estimator(
      model_fn, config=config, params={'learning_rate': 0.01},
      warm_start_from=FLAGS.init_checkpoint)
  estimator.train(
      lambda: digits.dataset(FLAGS.data_dir, 'train', FLAGS.batch_size, True),
      hooks=[tf.estimator.StopAtStepHook(num_steps=FLAGS.train_steps)])
  print('latest checkpoint:', estimator.latest_checkpoint().rsplit('/')[-1])
  print('hidden bias[:3]:', estimator.get_variable_value(
      'mlp/hidden/bias')[:3])
  if FLAGS.evaluate:
    results = estimator.evaluate(
        lambda: digits.dataset(FLAGS.data_dir, 'validation', 40, False),
        steps=FLAGS.eval_steps)
    print('eval global_step=%d loss=%.6f accuracy=%.6f' % (
        results['global_step'], results['loss'], results['accuracy']))
  predictions = estimator.predict(lambda: digits.dataset(
      FLAGS.data_dir, 'validation', 8, False, with_labels=False))
  for i, prediction in enumerate(predictions):
    if i >= FLAGS.predict_examples:
      break
    print('prediction %d class=%d p=%s' % (i, prediction['class'], ' '.join(
        '%.4f' % p for p in prediction['probabilities'])))


if __name__ == '__main__':
  logging.set_verbosity(logging.INFO)
  app.run(main)
