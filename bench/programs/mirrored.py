"""The custom model_fn under MirroredStrategy on 2 logical CPU devices
(RunConfig(train_distribute=..., eval_distribute=...)): train, evaluate,
predict, export, serve; its figures (timing.py) to --out."""

from absl import app
import tensorflow as tf

import custom
import synthetic
import timing

FLAGS = timing.FLAGS


def main(_):
  cpu, = tf.config.list_physical_devices('CPU')
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
  strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
  figures = timing.Figures(FLAGS.out)
  estimator = tf.estimator.Estimator(
      custom.model_fn, model_dir=FLAGS.model_dir,
      params={'metrics': False},
      config=tf.estimator.RunConfig(tf_random_seed=1,
                                    train_distribute=strategy,
                                    eval_distribute=strategy,
                                    # The real Estimator's all-reduce needs
                                    # more inter-op threads than 2 cores give.
                                    session_config=tf.compat.v1.ConfigProto(
                                        device_count={'CPU': 2},
                                        inter_op_parallelism_threads=8,
                                        allow_soft_placement=True)))
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
