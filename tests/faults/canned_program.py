"""Fixture: a canned-Estimator program, as teams wrote census-style ones.

DNNLinearCombinedClassifier: the wide part on a vocabulary-file column and
a bucketized column, the deep part on an embedding of the vocabulary column
and two numeric ones; a CSV file read with TextLineDataset; then
tf.estimator.train_and_evaluate with a LatestExporter (--mode=
train_and_evaluate), or training alone (--mode=train), or
export_saved_model of the latest checkpoint into --export_dir
(--mode=export); --replicas=N trains with a MirroredStrategy (the facade's
tf2 runner). --fault=NAME breaks one thing as users break it:

  missing_feature  the input_fn leaves out feature x2, which a column reads
  label_beyond     labels 1 and 2 for n_classes=2
  string_labels    labels 'yes' / 'no' without label_vocabulary
  own_error        the program's own input_fn raises a ValueError
"""

import os

from absl import app
from absl import flags
import tensorflow as tf

FLAGS = flags.FLAGS
flags.DEFINE_string('model_dir', None, 'Checkpoints, summaries, exports.')
flags.DEFINE_string('data_file', None, 'CSV of x1,x2,color,label rows.')
flags.DEFINE_string('vocabulary_file', None, 'The colors, one a line.')
flags.DEFINE_enum('mode', 'train_and_evaluate',
                  ['train_and_evaluate', 'train', 'export'], 'What to do.')
flags.DEFINE_integer('replicas', 1, 'RunConfig.train_distribute: a '
                     'MirroredStrategy over this many logical CPU devices.')
flags.DEFINE_string('export_dir', None, '--mode=export: where to export.')
flags.DEFINE_integer('max_steps', 4, 'TrainSpec.max_steps.')
flags.DEFINE_enum('fault', 'none', ['none', 'missing_feature',
                                    'label_beyond', 'string_labels',
                                    'own_error'],
                  'What to break (see the docstring).')

COLORS = ('red', 'green', 'blue')  # The vocabulary file's (faultutil).


def columns():
  fc = tf.feature_column
  color = fc.categorical_column_with_vocabulary_file(
      'color', FLAGS.vocabulary_file, vocabulary_size=len(COLORS))
  x1, x2 = fc.numeric_column('x1'), fc.numeric_column('x2')
  wide = [color, x1, fc.bucketized_column(x1, [0.25, 0.5, 0.75])]
  deep = [x1, x2, fc.embedding_column(color, 2)]
  return wide, deep


def input_fn(training):
  def fn():
    if FLAGS.fault == 'own_error':
      raise ValueError(f'no rows selected from {FLAGS.data_file}')
    def parse(line):
      x1, x2, color, label = tf.io.decode_csv(
          line, [[0.0], [0.0], [''], [0]])
      if FLAGS.fault == 'label_beyond':
        label += 1
      if FLAGS.fault == 'string_labels':
        label = tf.where(label > 0, 'yes', 'no')
      features = {'x1': x1, 'x2': x2, 'color': color}
      if FLAGS.fault == 'missing_feature':
        del features['x2']
      return features, label
    dataset = tf.data.TextLineDataset(FLAGS.data_file).map(parse)
    dataset = dataset.batch(8)
    return dataset.repeat() if training else dataset
  return fn


def serving_input_receiver_fn():
  wide, deep = columns()
  return tf.estimator.export.build_parsing_serving_input_receiver_fn(
      tf.feature_column.make_parse_example_spec(wide + deep))()


def _strategy():
  if FLAGS.replicas == 1:
    return None
  cpu, = tf.config.list_physical_devices('CPU')
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * FLAGS.replicas)
  return tf.distribute.MirroredStrategy(
      [f'/cpu:{i}' for i in range(FLAGS.replicas)])


def main(argv):
  del argv
  wide, deep = columns()
  estimator = tf.estimator.DNNLinearCombinedClassifier(
      model_dir=FLAGS.model_dir, linear_feature_columns=wide,
      dnn_feature_columns=deep, dnn_hidden_units=[4],
      config=tf.estimator.RunConfig(tf_random_seed=1,
                                    save_checkpoints_steps=2,
                                    train_distribute=_strategy()))
  if FLAGS.mode == 'train':
    estimator.train(input_fn(True), max_steps=FLAGS.max_steps)
    return
  if FLAGS.mode == 'export':
    path = estimator.export_saved_model(FLAGS.export_dir,
                                        serving_input_receiver_fn)
    print(f'exported {path.decode()}')
    return
  exporter = tf.estimator.LatestExporter('canned', serving_input_receiver_fn)
  metrics, _ = tf.estimator.train_and_evaluate(
      estimator,
      tf.estimator.TrainSpec(input_fn(True), max_steps=FLAGS.max_steps),
      tf.estimator.EvalSpec(input_fn(False), steps=2, exporters=[exporter],
                            throttle_secs=0))
  if metrics is not None:  # None on tasks that do not evaluate.
    print(f'final global_step={metrics["global_step"]} '
          f'accuracy={metrics["accuracy"]:.4f}')


if __name__ == '__main__':
  app.run(main)
