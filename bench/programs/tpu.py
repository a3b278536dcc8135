"""A TPUEstimator program off TPU (use_tpu=False, iterations_per_loop=50):
the custom model's model_fn as a TPUEstimatorSpec with a
CrossShardOptimizer-free Adam; train, evaluate, predict, export, serve; its
figures (timing.py) to --out."""

from absl import app
import tensorflow as tf

import custom
import synthetic
import timing

FLAGS = timing.FLAGS
v1 = tf.compat.v1
tpu = v1.estimator.tpu


def model_fn(features, labels, mode, params):
  del params
  net = features['x']
  for units in (128, 64):
    net = v1.layers.dense(net, units, activation=tf.nn.relu)
  logits = v1.layers.dense(net, 4)
  if mode == tf.estimator.ModeKeys.PREDICT:
    predictions = {'classes': tf.argmax(logits, axis=1),
                   'probabilities': tf.nn.softmax(logits)}
    return tpu.TPUEstimatorSpec(mode, predictions=predictions)
  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    def metric_fn(labels, logits):
      return {'accuracy': v1.metrics.accuracy(labels, tf.argmax(logits, 1))}
    return tpu.TPUEstimatorSpec(mode, loss=loss,
                                eval_metrics=(metric_fn, [labels, logits]))
  train_op = v1.train.AdamOptimizer(1e-3).minimize(
      loss, global_step=v1.train.get_global_step())
  return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main(_):
  figures = timing.Figures(FLAGS.out)
  config = tpu.RunConfig(
      model_dir=FLAGS.model_dir, tf_random_seed=1,
      tpu_config=tpu.TPUConfig(iterations_per_loop=50))
  estimator = tpu.TPUEstimator(
      model_fn=model_fn, config=config, use_tpu=False,
      train_batch_size=FLAGS.batch_size, eval_batch_size=FLAGS.batch_size,
      predict_batch_size=FLAGS.batch_size)
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
                                          custom.serving_input_fn)
  x, _ = synthetic.dense_table(1, seed=1)
  figures.serve(export.decode(), {'x': tf.constant(x)})
  figures.write()


if __name__ == '__main__':
  app.run(main)
