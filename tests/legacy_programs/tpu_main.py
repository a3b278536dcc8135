"""Fixture: a Cloud-TPU-era TPUEstimator main, written the way they were.

TF1 API through tensorflow.compat.v1 with disable_v2_behavior(), absl flags
at module level, TPUClusterResolver(FLAGS.tpu or '') even without a TPU, a
tpu.RunConfig with a session_config, a host_call writing the loss with
tf.compat.v2.summary, a scaffold_fn warm-starting from --init_checkpoint,
Estimator's private global-step helper, and one --mode per loop:
  train_and_eval   train to --train_steps, evaluating every --steps_per_eval
  continuous_eval  a checkpoints_iterator loop evaluating each checkpoint
  predict          prints class and probabilities of the first examples
  export           export_saved_model with a placeholder receiver fn
"""

import os

from absl import app
from absl import flags
from absl import logging
import tensorflow.compat.v1 as tf
from tensorflow.python.estimator import estimator as estimator_lib

import digits

FLAGS = flags.FLAGS
flags.DEFINE_string('tpu', None, 'Cloud TPU name.')
flags.DEFINE_string('tpu_zone', None, 'GCE zone of the TPU.')
flags.DEFINE_string('gcp_project', None, 'GCP project of the TPU.')
flags.DEFINE_bool('use_tpu', False, 'Use the TPU.')
flags.DEFINE_string('data_dir', None, 'Directory of train-*/validation-*.')
flags.DEFINE_string('model_dir', None, 'Checkpoints and summaries.')
flags.DEFINE_enum('mode', 'train_and_eval',
                  ['train_and_eval', 'continuous_eval', 'predict', 'export'],
                  'What to do.')
flags.DEFINE_integer('train_steps', 40, 'Total training steps.')
flags.DEFINE_integer('steps_per_eval', 20, 'Steps between evaluations.')
flags.DEFINE_integer('iterations_per_loop', 10, 'Steps per TPU loop.')
flags.DEFINE_integer('num_shards', 8, 'TPU cores.')
flags.DEFINE_integer('train_batch_size', 32, 'Global training batch.')
flags.DEFINE_integer('eval_batch_size', 40, 'Global evaluation batch.')
flags.DEFINE_integer('eval_steps', 3, 'Evaluation batches.')
flags.DEFINE_integer('predict_batch_size', 8, 'Prediction batch.')
flags.DEFINE_integer('predict_examples', 5, 'Predictions printed.')
flags.DEFINE_float('learning_rate', 0.05, 'Momentum learning rate.')
flags.DEFINE_string('init_checkpoint', None, 'Warm-start checkpoint.')
flags.DEFINE_string('export_dir', None, 'Where to export SavedModels.')
flags.DEFINE_integer('eval_timeout', 1, 'checkpoints_iterator timeout (s).')


def dense(inputs, units, name):
  with tf.variable_scope(name):
    kernel = tf.get_variable('kernel', [inputs.shape[-1], units])
    bias = tf.get_variable('bias', [units],
                           initializer=tf.zeros_initializer())
  return tf.matmul(inputs, kernel) + bias


def model_fn(features, labels, mode, params):
  images = features['image']
  with tf.variable_scope('mlp'):
    hidden = tf.nn.relu(dense(images, params['hidden_units'], 'hidden'))
    logits = dense(hidden, 10, 'logits')

  if mode == tf.estimator.ModeKeys.PREDICT:
    predictions = {'classes': tf.argmax(logits, axis=1),
                   'probabilities': tf.nn.softmax(logits)}
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode=mode, predictions=predictions,
        export_outputs={'classify': tf.estimator.export.PredictOutput(
            predictions)})

  loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))

  if mode == tf.estimator.ModeKeys.EVAL:
    def metric_fn(labels, logits):
      predictions = tf.argmax(logits, axis=1)
      return {'accuracy': tf.metrics.accuracy(labels, predictions)}
    return tf.estimator.tpu.TPUEstimatorSpec(
        mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))

  global_step = tf.train.get_global_step()
  optimizer = tf.train.MomentumOptimizer(params['learning_rate'], 0.9)
  if params['use_tpu']:
    optimizer = tf.tpu.CrossShardOptimizer(optimizer)
  train_op = optimizer.minimize(loss, global_step)

  def host_call_fn(gs, loss):
    with tf.compat.v2.summary.create_file_writer(
        FLAGS.model_dir, max_queue=FLAGS.iterations_per_loop).as_default():
      with tf.compat.v2.summary.record_if(True):
        tf.compat.v2.summary.scalar('fixture/loss', loss[0], step=gs[0])
        return tf.summary.all_v2_summary_ops()

  host_call = (host_call_fn, [tf.reshape(global_step, [1]),
                              tf.reshape(loss, [1])])

  scaffold_fn = None
  if FLAGS.init_checkpoint:
    names = [v.name.split(':')[0] for v in tf.trainable_variables()]

    def scaffold_fn():
      tf.train.init_from_checkpoint(FLAGS.init_checkpoint,
                                    {n: n for n in names})
      return tf.train.Scaffold()

  return tf.estimator.tpu.TPUEstimatorSpec(
      mode=mode, loss=loss, train_op=train_op, host_call=host_call,
      scaffold_fn=scaffold_fn)


def input_fn_for(split, training, with_labels=True):
  def input_fn(params):
    return digits.dataset(FLAGS.data_dir, split, params['batch_size'],
                          repeat=training, with_labels=with_labels)
  return input_fn


def serving_input_receiver_fn():
  images = tf.placeholder(tf.float32, [None, 784], name='images')
  return tf.estimator.export.ServingInputReceiver({'image': images},
                                                  {'images': images})


def main(argv):
  del argv
  tpu_cluster_resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
      FLAGS.tpu if FLAGS.tpu else '', zone=FLAGS.tpu_zone,
      project=FLAGS.gcp_project)
  config = tf.estimator.tpu.RunConfig(
      cluster=tpu_cluster_resolver,
      model_dir=FLAGS.model_dir,
      save_checkpoints_steps=FLAGS.iterations_per_loop,
      keep_checkpoint_max=20,
      session_config=tf.ConfigProto(allow_soft_placement=True,
                                    log_device_placement=False),
      tpu_config=tf.estimator.tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations_per_loop,
          num_shards=FLAGS.num_shards,
          per_host_input_for_training=(
              tf.estimator.tpu.InputPipelineConfig.PER_HOST_V2)))
  estimator = tf.estimator.tpu.TPUEstimator(
      model_fn=model_fn, config=config, use_tpu=FLAGS.use_tpu,
      train_batch_size=FLAGS.train_batch_size,
      eval_batch_size=FLAGS.eval_batch_size,
      predict_batch_size=FLAGS.predict_batch_size,
      params={'learning_rate': FLAGS.learning_rate, 'hidden_units': 32})

  if FLAGS.mode == 'train_and_eval':
    current_step = estimator_lib._load_global_step_from_checkpoint_dir(  # pylint: disable=protected-access
        FLAGS.model_dir)
    logging.info('Training from step %d to %d.', current_step,
                 FLAGS.train_steps)
    while current_step < FLAGS.train_steps:
      next_checkpoint = min(current_step + FLAGS.steps_per_eval,
                            FLAGS.train_steps)
      estimator.train(input_fn=input_fn_for('train', True),
                      max_steps=next_checkpoint)
      current_step = next_checkpoint
      results = estimator.evaluate(input_fn=input_fn_for('validation', False),
                                   steps=FLAGS.eval_steps)
      print('eval global_step=%d loss=%.6f accuracy=%.6f' % (
          results['global_step'], results['loss'], results['accuracy']))
    print('variables:', ' '.join(sorted(estimator.get_variable_names())))

  elif FLAGS.mode == 'continuous_eval':
    for checkpoint in tf.train.checkpoints_iterator(
        FLAGS.model_dir, timeout=FLAGS.eval_timeout):
      results = estimator.evaluate(input_fn=input_fn_for('validation', False),
                                   steps=FLAGS.eval_steps,
                                   checkpoint_path=checkpoint)
      print('continuous_eval checkpoint=%s global_step=%d accuracy=%.6f' % (
          os.path.basename(checkpoint), results['global_step'],
          results['accuracy']))
      if results['global_step'] >= FLAGS.train_steps:
        break

  elif FLAGS.mode == 'predict':
    predictions = estimator.predict(
        input_fn=input_fn_for('validation', False, with_labels=False))
    for i, prediction in enumerate(predictions):
      if i >= FLAGS.predict_examples:
        break
      print('prediction %d class=%d probabilities=%s' % (
          i, prediction['classes'],
          ' '.join('%.6f' % p for p in prediction['probabilities'])))

  elif FLAGS.mode == 'export':
    path = estimator.export_saved_model(FLAGS.export_dir,
                                        serving_input_receiver_fn)
    print('exported %s' % path.decode())


if __name__ == '__main__':
  logging.set_verbosity(logging.INFO)
  tf.disable_v2_behavior()
  app.run(main)
