"""KMeans cells, recording what a user observes, as JSON.

Run it as `python -m trainer.legacy kmeans_program.py --out=F --work_dir=D`
on TF 2.15 (tensorflow_estimator's KMeans: regenerate.py writes
golden/kmeans.json) and on TF >= 2.16 (the facade: kmeans_test.py
compares). Each cell trains tf.compat.v1.estimator.experimental.KMeans on
the same points (mini-batch or full-batch; random, kmeans++ or given
initial centers; squared-Euclidean or cosine distance; feature columns;
a relative tolerance that stops training early) and records the
checkpoint's variables, the summaries (`loss/raw` and `loss` of every step),
cluster_centers(), score(), predict_cluster_index(), transform(), evaluate()
and predict(), and the exported signatures' outputs.
"""

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
from tests.conformance import observe
# pylint: enable=g-import-not-at-top,wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string('out', None, 'Where to write the JSON record.')
flags.DEFINE_string('work_dir', None, 'Model dirs and exports go here.')
flags.DEFINE_list('cells', None, 'Only these cells (default: all).')
flags.DEFINE_bool('verbose', False, 'Raise the first error of a cell.')

v1 = tf.compat.v1
N, BATCH = 60, 20


def _points():
  rng = np.random.RandomState(3)
  centers = np.array([[2., 2.], [-2., 1.], [0., -2.]], np.float32)
  labels = rng.randint(0, 3, N)
  return (centers[labels] + rng.normal(0, 0.6, (N, 2))).astype(np.float32)


POINTS = _points()
KMeans = None  # tf.compat.v1.estimator.experimental.KMeans, once installed.

# name: (KMeans arguments, full batch, steps, feature columns).
CELLS = {
    'minibatch_random': (dict(num_clusters=3, seed=5), False, 6, False),
    'fullbatch_kmeans_plus_plus': (
        dict(num_clusters=3, use_mini_batch=False, seed=5,
             initial_clusters='kmeans_plus_plus'), True, 4, False),
    'cosine_fullbatch': (
        dict(num_clusters=3, use_mini_batch=False, seed=2,
             distance_metric='cosine'), True, 4, False),
    'minibatch_3_steps_per_iteration': (
        dict(num_clusters=3, seed=7, mini_batch_steps_per_iteration=3),
        False, 6, False),
    'given_centers_tolerance': (
        dict(num_clusters=3, use_mini_batch=False, relative_tolerance=1e-3,
             initial_clusters=np.array([[1., 1.], [-1., 0.], [0., -1.]],
                                       np.float32)), True, 20, False),
    'feature_columns': (dict(num_clusters=2, seed=1, use_mini_batch=False),
                        True, 4, True),
}
# Mini-batch training's variable reads and updates are not ordered within a
# step (TF's clustering graph: "updates are applied asynchronously without
# locking"): under TF 2.15 itself its values change with what a step
# fetches, and from run to run. Only the full-batch cells' values repeat.
# (kmeans_test.py names them too.)
MINI_BATCH = ('minibatch_random', 'minibatch_3_steps_per_iteration')


def _input_fn(full_batch, dict_features, repeat=True):
  """Batches of the points (all of them per batch for full batch)."""

  def input_fn():
    data = tf.data.Dataset.from_tensor_slices(POINTS)
    if dict_features:
      data = data.map(lambda p: {'a': p[:1], 'b': p[1:]})
    if repeat:
      data = data.repeat()
    return data.batch(N if full_batch else BATCH)

  return input_fn


def _serving_fn(dict_features):
  if dict_features:
    spec = {'a': tf.io.FixedLenFeature([1], tf.float32),
            'b': tf.io.FixedLenFeature([1], tf.float32)}
    return tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)

  def fn():
    x = v1.placeholder(tf.float32, [None, 2], 'x')
    return tf.estimator.export.TensorServingInputReceiver(x, {'x': x})

  return fn


def _feed():
  examples = [tf.train.Example(features=tf.train.Features(feature={
      'a': tf.train.Feature(float_list=tf.train.FloatList(value=p[:1])),
      'b': tf.train.Feature(float_list=tf.train.FloatList(value=p[1:]))
  })).SerializeToString() for p in POINTS[:4]]
  return {'x': POINTS[:4], 'examples': examples, 'inputs': examples}


def _variables(model_dir):
  reader = tf.train.load_checkpoint(model_dir)
  dtypes = reader.get_variable_to_dtype_map()
  return {name: [dtypes[name].name, list(shape),
                 observe.plain(reader.get_tensor(name))]
          for name, shape in tf.train.list_variables(model_dir)}


def run_cell(name, work_dir):
  """The observables of one cell (see the module docstring)."""
  args, full_batch, steps, columns = CELLS[name]
  model_dir = os.path.join(work_dir, name)
  if columns:
    args = dict(args, feature_columns=[
        tf.feature_column.numeric_column('a'),
        tf.feature_column.numeric_column('b')])
  est = KMeans(model_dir=model_dir, config=tf.estimator.RunConfig(
      tf_random_seed=11, save_summary_steps=1, log_step_count_steps=None),
      **args)
  train = _input_fn(full_batch, columns)
  est.train(train, steps=steps)
  once = _input_fn(full_batch, columns, repeat=False)
  record = {
      'variables': _variables(model_dir),
      'cluster_centers': observe.plain(est.cluster_centers()),
      'score': observe.plain(est.score(train)),
      'metrics': observe.plain(est.evaluate(once)),
      'cluster_index': observe.plain(list(est.predict_cluster_index(once))),
      'transform': observe.plain(list(est.transform(once))[:8]),
      'predictions': [observe.plain(p) for p in est.predict(once)][:8],
      'summaries': observe.events(model_dir),
  }
  path = est.export_saved_model(os.path.join(work_dir, '_export', name),
                                _serving_fn(columns))
  record['export'] = observe.export(
      path.decode() if isinstance(path, bytes) else path, _feed())
  return record


def main(argv):
  del argv
  global KMeans
  KMeans = tf.compat.v1.estimator.experimental.KMeans
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  v1.logging.set_verbosity(v1.logging.ERROR)
  results = {}
  for name in CELLS:
    if FLAGS.cells and name not in FLAGS.cells:
      continue
    try:
      results[name] = run_cell(name, FLAGS.work_dir)
    except Exception as e:  # pylint: disable=broad-except
      results[name] = {'error': f'{type(e).__name__}: {str(e)[:600]}'}
      if FLAGS.verbose:
        raise
  with open(FLAGS.out, 'w') as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == '__main__':
  flags.mark_flags_as_required(['out', 'work_dir'])
  app.run(main)
