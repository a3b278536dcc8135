"""Fixture: a TPUEstimator program as public TPU code writes one.

As tensorflow/tpu's mnist_tpu.py: absl flags at module level,
TPUClusterResolver(FLAGS.tpu) when --use_tpu, a tpu.RunConfig, a model_fn on
get_variable that wraps its optimizer in CrossShardOptimizer and sums its
loss with cross_replica_sum under its own --use_tpu (--tpu_only_call: and
calls a tf.tpu function only a TPU runs), TFRecordDataset input; then train_and_evaluate, a train/evaluate
loop, evaluate alone or an export, as --mode says; --replicas=N trains
with a MirroredStrategy (the facade's tf2 runner). The training batch is
the same every step (a split of exactly --batch_size records), so a run
interrupted and resumed ends with the same weights as one that was not.
"""

import glob
import os

from absl import app
from absl import flags
from absl import logging
import tensorflow.compat.v1 as tf

FLAGS = flags.FLAGS
flags.DEFINE_string('model_dir', None, 'Checkpoints and summaries.')
flags.DEFINE_string('data_dir', None, 'Directory of train-* / validation-*.')
flags.DEFINE_bool('use_tpu', False, 'Use a TPU.')
flags.DEFINE_string('tpu', None, 'Cloud TPU name.')
flags.DEFINE_enum('mode', 'loop', ['loop', 'train_and_evaluate', 'evaluate',
                                   'export', 'dict_model_fn'], 'What to do.')
flags.DEFINE_integer('train_steps', 60, 'Total training steps.')
flags.DEFINE_integer('steps_per_eval', 30, 'Steps between evaluations.')
flags.DEFINE_integer('save_steps', 20, 'Steps between checkpoints.')
flags.DEFINE_integer('batch_size', 16, 'Global batch.')
flags.DEFINE_integer('eval_steps', 2, 'Evaluation batches.')
flags.DEFINE_integer('iterations_per_loop', 10, 'Steps per TPU loop.')
flags.DEFINE_string('export_dir', None, 'Where SavedModels go.')
flags.DEFINE_integer('replicas', 1, 'Train with a MirroredStrategy over '
                     'this many logical CPU devices (RunConfig.'
                     'train_distribute).')
flags.DEFINE_enum('tpu_only_call', None, ['rewrite'], 'Under --use_tpu, '
                  'also call tf.tpu.<this>, which only a TPU can run.')
flags.DEFINE_integer('hidden_units', 16, 'Width of the hidden layer (another '
                     'width on a restart: a changed model).')
flags.DEFINE_float('ballast_mb', 0, 'MB of a variable training leaves '
                   'alone (as a large embedding table): bigger checkpoints.')


def _parse(serialized):
  features = tf.io.parse_single_example(serialized, {
      'image/encoded': tf.io.FixedLenFeature([], tf.string),
      'image/class/label': tf.io.FixedLenFeature([], tf.int64)})
  image = tf.io.decode_raw(features['image/encoded'], tf.uint8)
  image = tf.cast(tf.reshape(image, [784]), tf.float32) / 255.0
  return {'image': image}, tf.cast(features['image/class/label'], tf.int32)


def input_fn_for(split, training):
  def input_fn(params):
    files = sorted(glob.glob(os.path.join(FLAGS.data_dir, split + '-*')))
    dataset = tf.data.TFRecordDataset(files).map(_parse)
    if training:
      dataset = dataset.repeat()
    return dataset.batch(params['batch_size'], drop_remainder=True)
  return input_fn


def model_fn(features, labels, mode, params):
  with tf.variable_scope('mlp'):
    width = FLAGS.hidden_units
    w1 = tf.get_variable('hidden/kernel', [784, width])
    b1 = tf.get_variable('hidden/bias', [width],
                         initializer=tf.zeros_initializer())
    w2 = tf.get_variable('logits/kernel', [width, 10])
    b2 = tf.get_variable('logits/bias', [10], initializer=tf.zeros_initializer())
    if FLAGS.ballast_mb:
      tf.get_variable('ballast', [int(FLAGS.ballast_mb * (1 << 18))],
                      initializer=tf.ones_initializer(), trainable=False)
  logits = tf.matmul(tf.nn.relu(tf.matmul(features['image'], w1) + b1),
                     w2) + b2
  if mode == tf.estimator.ModeKeys.PREDICT:
    predictions = {'classes': tf.argmax(logits, 1)}
    return tf.estimator.tpu.TPUEstimatorSpec(mode, predictions=predictions)
  loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))
  if mode == tf.estimator.ModeKeys.EVAL:
    def metric_fn(labels, logits):
      return {'accuracy': tf.metrics.accuracy(labels, tf.argmax(logits, 1))}
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
  optimizer = tf.train.MomentumOptimizer(0.05, 0.9)
  if FLAGS.use_tpu:
    optimizer = tf.tpu.CrossShardOptimizer(optimizer)
    # The mean over replicas, as TPU programs take it (of one core here).
    loss = tf.tpu.cross_replica_sum(loss) / 1.0
    if FLAGS.tpu_only_call:
      getattr(tf.tpu, FLAGS.tpu_only_call)(lambda: loss)
  train_op = optimizer.minimize(loss, tf.train.get_global_step())
  if FLAGS.mode == 'dict_model_fn':  # A misuse: a dict, not a spec.
    return {'loss': loss, 'train_op': train_op}
  return tf.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_receiver_fn():
  images = tf.placeholder(tf.float32, [None, 784], name='images')
  return tf.estimator.export.ServingInputReceiver({'image': images},
                                                  {'images': images})


def main(argv):
  del argv
  resolver = None
  if FLAGS.use_tpu:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(FLAGS.tpu)
  strategy = None
  if FLAGS.replicas > 1:
    cpu, = tf.config.list_physical_devices('CPU')
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * FLAGS.replicas)
    strategy = tf.distribute.MirroredStrategy(
        [f'/cpu:{i}' for i in range(FLAGS.replicas)])
  config = tf.estimator.tpu.RunConfig(
      cluster=resolver, model_dir=FLAGS.model_dir, tf_random_seed=1,
      train_distribute=strategy,
      save_checkpoints_steps=FLAGS.save_steps, keep_checkpoint_max=3,
      log_step_count_steps=1,
      tpu_config=tf.estimator.tpu.TPUConfig(FLAGS.iterations_per_loop))
  estimator = tf.estimator.tpu.TPUEstimator(
      model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
      train_batch_size=FLAGS.batch_size, eval_batch_size=FLAGS.batch_size,
      predict_batch_size=FLAGS.batch_size)
  train_input = input_fn_for('train', True)
  eval_input = input_fn_for('validation', False)
  if FLAGS.mode == 'train_and_evaluate':
    exporter = tf.estimator.LatestExporter('latest',
                                           serving_input_receiver_fn)
    tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(train_input, max_steps=FLAGS.train_steps),
        tf.estimator.EvalSpec(eval_input, steps=FLAGS.eval_steps,
                              exporters=[exporter], throttle_secs=0))
  elif FLAGS.mode in ('loop', 'dict_model_fn'):
    step = 0
    while step < FLAGS.train_steps:
      step = min(step + FLAGS.steps_per_eval, FLAGS.train_steps)
      estimator.train(train_input, max_steps=step)
  elif FLAGS.mode == 'export':
    path = estimator.export_saved_model(FLAGS.export_dir,
                                        serving_input_receiver_fn)
    print('exported %s' % path.decode())
    return
  results = estimator.evaluate(eval_input, steps=FLAGS.eval_steps)
  print('final global_step=%d loss=%.6f accuracy=%.6f' % (
      results['global_step'], results['loss'], results['accuracy']))


if __name__ == '__main__':
  logging.set_verbosity(logging.INFO)
  app.run(main)
