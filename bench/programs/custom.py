"""A custom model_fn Estimator (dense 16-128-64-4, Adam, accuracy metric,
summaries): train, evaluate, predict, export, serve; its figures
(timing.py) to --out."""

from absl import app
import tensorflow as tf

import synthetic
import timing

FLAGS = timing.FLAGS
v1 = tf.compat.v1


def model_fn(features, labels, mode, params=None):
  """params['metrics']: False leaves the accuracy metric out (for
  MirroredStrategy: the facade cannot build a tf.compat.v1.metrics
  variable under it at evaluate, UnliftableError)."""
  net = features['x']
  for units in (128, 64):
    net = v1.layers.dense(net, units, activation=tf.nn.relu)
  logits = v1.layers.dense(net, 4)
  classes = tf.argmax(logits, axis=1)
  if mode == tf.estimator.ModeKeys.PREDICT:
    predictions = {'classes': classes, 'probabilities': tf.nn.softmax(logits)}
    return tf.estimator.EstimatorSpec(mode, predictions=predictions,
                                      export_outputs={
                                          'serving_default':
                                              tf.estimator.export.PredictOutput(
                                                  predictions)})
  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  metrics = (params or {}).get('metrics', True)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
        'accuracy': v1.metrics.accuracy(labels, classes)} if metrics else {})
  if metrics:
    v1.summary.scalar('accuracy', v1.metrics.accuracy(labels, classes)[1])
  train_op = v1.train.AdamOptimizer(1e-3).minimize(
      loss, global_step=v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_fn():
  x = v1.placeholder(tf.float32, [None, synthetic.DENSE_WIDTH], name='x')
  return tf.estimator.export.ServingInputReceiver({'x': x}, {'x': x})


def main(_):
  figures = timing.Figures(FLAGS.out)
  estimator = tf.estimator.Estimator(
      model_fn, model_dir=FLAGS.model_dir,
      config=tf.estimator.RunConfig(tf_random_seed=1))
  with figures.phase('train'):
    estimator.train(synthetic.dense_input_fn(FLAGS.batch_size, True),
                    max_steps=FLAGS.train_steps, hooks=[figures.hook()])
  with figures.phase('evaluate'):
    estimator.evaluate(synthetic.dense_input_fn(FLAGS.batch_size, False),
                       steps=FLAGS.eval_steps)
  with figures.phase('predict'):
    list(estimator.predict(
        synthetic.dense_input_fn(FLAGS.batch_size, False, 512)))
  with figures.phase('export'):
    export = estimator.export_saved_model(FLAGS.model_dir + '/export',
                                          serving_input_fn)
  x, _ = synthetic.dense_table(1, seed=1)
  figures.serve(export.decode(), {'x': tf.constant(x)})
  figures.write()


if __name__ == '__main__':
  app.run(main)
