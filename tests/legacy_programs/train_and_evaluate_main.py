"""Fixture: tf.estimator.train_and_evaluate, run as a module (-m).

An Estimator whose model_fn(features, labels, mode) uses
tf.compat.v1.layers and returns EstimatorSpecs (loss only in EVAL),
TrainSpec / EvalSpec with throttle_secs=0 so every checkpoint is evaluated.
"""

from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

from tests.legacy_programs import digits

FLAGS = flags.FLAGS
flags.DEFINE_string('data_dir', None, 'Directory of train-*/validation-*.')
flags.DEFINE_string('model_dir', None, 'Checkpoints and summaries.')
flags.DEFINE_integer('max_steps', 30, 'TrainSpec.max_steps.')
flags.DEFINE_integer('save_checkpoints_steps', 10, 'Checkpoint cadence.')


def model_fn(features, labels, mode):
  layer = tf.compat.v1.layers.Dense(10, name='linear')
  logits = layer(features['image'])
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions=logits)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(argv):
  del argv
  estimator = tf.estimator.Estimator(
      model_fn, model_dir=FLAGS.model_dir,
      config=tf.estimator.RunConfig(
          save_checkpoints_steps=FLAGS.save_checkpoints_steps))
  train_spec = tf.estimator.TrainSpec(
      lambda: digits.dataset(FLAGS.data_dir, 'train', 16, True),
      max_steps=FLAGS.max_steps)
  eval_spec = tf.estimator.EvalSpec(
      lambda: digits.dataset(FLAGS.data_dir, 'validation', 40, False),
      steps=2, name='holdout', start_delay_secs=0, throttle_secs=0)
  result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
  if result is None:  # A task of a TF_CONFIG cluster: Estimator returns None.
    print('trained as task %s' % estimator.config.task_type)
    return
  metrics, exports = result
  print('final global_step=%d loss=%.6f exports=%d' % (
      metrics['global_step'], metrics['loss'], len(exports)))


if __name__ == '__main__':
  logging.set_verbosity(logging.INFO)
  app.run(main)
