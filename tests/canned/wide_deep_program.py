"""A wide & deep program as teams wrote them for TF 1.x/2.x Estimator.

DNNLinearCombinedClassifier: wide part on a hashed, a crossed (education x
occupation) and a bucketized column; deep part on embedded hashed and
vocabulary columns and a numeric one; trained and evaluated with
tf.estimator.train_and_evaluate, exporting with a LatestExporter (a parsing
serving receiver).

  --phase=first     trains from scratch to FIRST_STEPS (run on TF 2.15);
  --phase=continue  copies --from_dir's checkpoint and trains on to
                    FINAL_STEPS (the same data again): the per-step losses,
                    the final checkpoint, the last evaluation and what the
                    newest export serves for EXAMPLES go to --out (JSON).
Run it as `python -m trainer.legacy wide_deep_program.py ...` on any lane.
"""

import glob
import json
import os
import sys

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# pylint: disable=g-import-not-at-top,wrong-import-position
from tests.canned import regenerate
from tests.conformance import observe
# pylint: enable=g-import-not-at-top,wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_enum('phase', 'first', ['first', 'continue'], 'See docstring.')
flags.DEFINE_string('model_dir', None, 'The model directory.')
flags.DEFINE_string('from_dir', None, 'continue: the first run model_dir.')
flags.DEFINE_string('out', None, 'continue: where to write the record.')

FIRST_STEPS, FINAL_STEPS = 12, 24
BATCH = 8
EDUCATION = ['bachelors', 'masters', 'doctorate', 'hs-grad', 'some-college']
N = 48
_rng = np.random.RandomState(29)
DATA = {
    'age': _rng.uniform(17, 80, (N, 1)).astype(np.float32),
    'hours': _rng.uniform(10, 60, (N, 1)).astype(np.float32),
    'education': np.array(EDUCATION)[_rng.randint(0, 5, (N, 1))],
    'occupation': np.array([f'job{i}' for i in range(9)])[
        _rng.randint(0, 9, (N, 1))],
}
LABELS = ((DATA['age'] > 40) ^ (DATA['hours'] < 25) |
          (DATA['education'] == 'doctorate')).astype(np.int64)


def feature_columns():
  fc = tf.feature_column
  age = fc.numeric_column('age', normalizer_fn=lambda x: (x - 45.) / 15.)
  education = fc.categorical_column_with_vocabulary_list('education',
                                                         EDUCATION)
  occupation = fc.categorical_column_with_hash_bucket('occupation', 20)
  wide = [occupation,
          fc.bucketized_column(fc.numeric_column('age'),
                               [25., 35., 45., 55., 65.]),
          fc.crossed_column([education, 'occupation'], 50)]
  deep = [age,
          fc.numeric_column('hours', normalizer_fn=lambda x: (x - 35.) / 15.),
          fc.embedding_column(occupation, 4),
          fc.embedding_column(education, 3)]
  return wide, deep


def input_fn(training):
  def fn():
    ds = tf.data.Dataset.from_tensor_slices((DATA, LABELS)).batch(BATCH)
    return ds.repeat() if training else ds
  return fn


def serving_input_receiver_fn():
  wide, deep = feature_columns()
  return tf.estimator.export.build_parsing_serving_input_receiver_fn(
      tf.feature_column.make_parse_example_spec(wide + deep))()


EXAMPLES = [tf.train.Example(features=tf.train.Features(feature={
    'age': tf.train.Feature(float_list=tf.train.FloatList(value=[age])),
    'hours': tf.train.Feature(float_list=tf.train.FloatList(value=[hours])),
    'education': tf.train.Feature(bytes_list=tf.train.BytesList(
        value=[education.encode()])),
    'occupation': tf.train.Feature(bytes_list=tf.train.BytesList(
        value=[occupation.encode()])),
})).SerializeToString() for age, hours, education, occupation in (
    (23., 40., 'bachelors', 'job3'), (51., 20., 'doctorate', 'job7'),
    (38., 55., 'hs-grad', 'unseen-job'))]


class LossRecorder(tf.compat.v1.train.SessionRunHook):
  """The training loss of every step (Estimator's LOSSES collection)."""

  def __init__(self):
    self.losses = []
    self._loss = None

  def begin(self):
    self._loss = tf.compat.v1.get_collection(
        tf.compat.v1.GraphKeys.LOSSES)[-1]

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    self.losses.append(float(run_values.results))


def train_and_evaluate(model_dir, max_steps):
  """Runs the program to max_steps; (metrics, per-step losses)."""
  wide, deep = feature_columns()
  estimator = tf.estimator.DNNLinearCombinedClassifier(
      model_dir=model_dir, linear_feature_columns=wide,
      dnn_feature_columns=deep, dnn_hidden_units=[8, 4],
      config=tf.estimator.RunConfig(tf_random_seed=5,
                                    save_checkpoints_steps=6))
  recorder = LossRecorder()
  exporter = tf.estimator.LatestExporter('wide_deep',
                                         serving_input_receiver_fn)
  metrics, _ = tf.estimator.train_and_evaluate(
      estimator,
      tf.estimator.TrainSpec(input_fn(True), max_steps=max_steps,
                             hooks=[recorder]),
      tf.estimator.EvalSpec(input_fn(False), steps=None,
                            exporters=[exporter], throttle_secs=0))
  return metrics, recorder.losses


def served(model_dir):
  """What the newest export's signatures give for EXAMPLES."""
  exports = sorted(glob.glob(os.path.join(model_dir, 'export', 'wide_deep',
                                          '*')))
  return observe.export(exports[-1], {'inputs': EXAMPLES,
                                      'examples': EXAMPLES})


def main(argv):
  del argv
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
  if FLAGS.phase == 'first':
    train_and_evaluate(FLAGS.model_dir, FIRST_STEPS)
    return
  regenerate.copy_checkpoint(FLAGS.from_dir, FLAGS.model_dir)
  metrics, losses = train_and_evaluate(FLAGS.model_dir, FINAL_STEPS)
  checkpoint = observe.checkpoint(FLAGS.model_dir)
  record = {'metrics': observe.plain(metrics), 'losses': losses,
            'variables': checkpoint['variables'],
            'served': served(FLAGS.model_dir)}
  with open(FLAGS.out, 'w') as f:
    json.dump(record, f, indent=1, sort_keys=True)


if __name__ == '__main__':
  flags.mark_flag_as_required('model_dir')
  app.run(main)
