"""The custom model_fn trained by a loopback TF_CONFIG cluster (chief, 2
workers, 1 ps; bench/facade.py starts the tasks) through
tf.estimator.train_and_evaluate, between-graph replication with the
variables on the ps. Figures (timing.py) on the chief: global steps/s after
--warmup_steps, train wall, CPU seconds, peak RSS."""

from absl import app
import tensorflow as tf

import custom
import synthetic
import timing

FLAGS = timing.FLAGS


def main(_):
  figures = timing.Figures(FLAGS.out)
  estimator = tf.estimator.Estimator(
      custom.model_fn, model_dir=FLAGS.model_dir, params={'metrics': False},
      config=tf.estimator.RunConfig(tf_random_seed=1))
  hooks = [figures.hook()]
  with figures.phase('train'):
    tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(synthetic.dense_input_fn(FLAGS.batch_size,
                                                        True),
                               max_steps=FLAGS.train_steps, hooks=hooks),
        tf.estimator.EvalSpec(synthetic.dense_input_fn(FLAGS.batch_size,
                                                       False),
                              steps=FLAGS.eval_steps))
  if FLAGS.out:
    figures.write()


if __name__ == '__main__':
  app.run(main)
