"""A canned DNNLinearCombinedClassifier (wide & deep) on feature columns:
train, evaluate, predict, export, serve; its figures (timing.py) to --out."""

from absl import app
import tensorflow as tf

import synthetic
import timing

FLAGS = timing.FLAGS


def main(_):
  figures = timing.Figures(FLAGS.out)
  dense, sparse = synthetic.feature_columns()
  estimator = tf.estimator.DNNLinearCombinedClassifier(
      linear_feature_columns=sparse + dense[:3],
      dnn_feature_columns=dense, dnn_hidden_units=[128, 64], n_classes=2,
      model_dir=FLAGS.model_dir,
      config=tf.estimator.RunConfig(tf_random_seed=1))
  with figures.phase('train'):
    estimator.train(synthetic.input_fn(FLAGS.batch_size, True),
                    max_steps=FLAGS.train_steps, hooks=[figures.hook()])
  with figures.phase('evaluate'):
    estimator.evaluate(synthetic.input_fn(FLAGS.batch_size, False),
                       steps=FLAGS.eval_steps)
  with figures.phase('predict'):
    list(estimator.predict(synthetic.input_fn(FLAGS.batch_size, False, 512)))
  spec = tf.feature_column.make_parse_example_spec(dense + sparse)
  with figures.phase('export'):
    export = estimator.export_saved_model(
        FLAGS.model_dir + '/export',
        tf.estimator.export.build_parsing_serving_input_receiver_fn(spec))
  figures.serve(export.decode(), synthetic.serving_example())
  figures.write()


if __name__ == '__main__':
  app.run(main)
