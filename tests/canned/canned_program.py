"""Runs the canned-Estimator matrix (canned_cells.py) and records what a user
observes, as JSON (--out): per cell
  * `variables`: names, dtypes and shapes of the checkpoint after training,
    and the values of every variable;
  * `losses`: the loss of every training step;
  * `metrics`: evaluate()'s result; `predictions`: predict()'s;
  * `summaries`: the summary tags (and scalar values) training and
    evaluation wrote;
  * `export`: the SavedModel's signatures, their inputs and their outputs for
    serialized tf.Examples.
Every cell whose `warm_start` is set starts from the same initial values on
every lane: a checkpoint of deterministic values (by variable name) that the
Estimator warm-starts its trainable variables from; the others (no
warm_start_from argument) from Keras's and TF's seeded initializers.

--phase=resume --from_dir=D continues every cell from the model dirs of a
previous run (another lane's): it records the restored variables, then
trains STEPS more steps and records the same observables.

Run it as `python -m trainer.legacy canned_program.py --out=F --work_dir=D`
on TF 2.15 (the real Estimator) and TF >= 2.16 (the facade).
"""

import json
import os
import shutil
import sys
import zlib

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# pylint: disable=g-import-not-at-top,wrong-import-position
from tests.canned import canned_cells
from tests.canned import regenerate
from tests.conformance import observe
# pylint: enable=g-import-not-at-top,wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string('out', None, 'Where to write the JSON record.')
flags.DEFINE_string('work_dir', None, 'Model dirs and exports go here.')
flags.DEFINE_list('cells', None, 'Only these cells (default: all).')
flags.DEFINE_enum('phase', 'fresh', ['fresh', 'resume'],
                  'fresh: from the initial values; resume: continue the '
                  'model dirs under --from_dir.')
flags.DEFINE_string('from_dir', None, 'The work_dir of the run to resume.')
flags.DEFINE_bool('verbose', False, 'Raise the first error of a cell (debugging).')

v1 = tf.compat.v1


class LossRecorder(v1.train.SessionRunHook):
  """Fetches the training loss (Estimator's LOSSES collection) each step."""

  def __init__(self, losses):
    self._losses = losses
    self._loss = None

  def begin(self):
    # Estimator adds the spec's loss last (heads may add their own before).
    self._loss = v1.get_collection(v1.GraphKeys.LOSSES)[-1]

  def before_run(self, run_context):
    return v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    self._losses.append(float(run_values.results))


def initial_value(name, shape, dtype):
  """A deterministic value of a variable, from its name."""
  rng = np.random.RandomState(zlib.crc32(name.encode()))
  return rng.uniform(-0.4, 0.4, size=shape).astype(dtype)


def write_initial_checkpoint(cell, work_dir):
  """A checkpoint of initial values for every float variable the cell's
  Estimator makes (found by training it one step in a scratch dir)."""
  scratch = os.path.join(work_dir, '_scratch_' + cell.name)
  cell.build(scratch, None, None).train(
      canned_cells.input_fn('train', cell), steps=1)
  reader = tf.train.load_checkpoint(scratch)
  dtypes = reader.get_variable_to_dtype_map()
  path = os.path.join(work_dir, '_init_' + cell.name, 'init.ckpt')
  with tf.Graph().as_default():
    for name, shape in tf.train.list_variables(scratch):
      if dtypes[name].is_floating:
        tf.Variable(initial_value(name, shape, dtypes[name].as_numpy_dtype),
                    name=name)
    with v1.Session() as session:
      session.run(v1.global_variables_initializer())
      v1.train.Saver().save(session, path)
  shutil.rmtree(scratch)
  return path


def serving_feed(cell):
  """Serialized tf.Examples of the first 3 examples, for every signature."""
  examples = []
  for i in range(3):
    feature = {}
    for key in cell.features:
      value = canned_cells.FEATURES[key][i].reshape(-1)
      if key == 'tag_w':  # Weights of the tags present, as they are sparse.
        value = value[canned_cells.FEATURES['tags'][i] != '']
      if value.dtype.kind in 'SU':
        kept = [v.encode() for v in value if v]
        feature[key] = tf.train.Feature(
            bytes_list=tf.train.BytesList(value=kept))
      elif value.dtype.kind == 'i':
        feature[key] = tf.train.Feature(
            int64_list=tf.train.Int64List(value=value))
      else:
        feature[key] = tf.train.Feature(
            float_list=tf.train.FloatList(value=value))
    examples.append(tf.train.Example(features=tf.train.Features(
        feature=feature)).SerializeToString())
  return {'inputs': examples, 'examples': examples}


def _serving_fn(cell, work_dir):
  return tf.estimator.export.build_parsing_serving_input_receiver_fn(
      canned_cells.parse_spec(cell, work_dir))


def _variables(model_dir):
  """{name: [dtype, shape, values]} of model_dir's latest checkpoint; the
  values None for a slot of a partitioned variable saved as one slice of
  the whole (a reader cannot read it whole)."""
  path = tf.train.latest_checkpoint(model_dir)
  if path is None:
    return None
  reader = tf.train.load_checkpoint(path)
  dtypes = reader.get_variable_to_dtype_map()
  found = {}
  for name, shape in tf.train.list_variables(path):
    if name.endswith('-values') and name[:-len('values')] + 'keys' in dtypes:
      continue  # A hash table's: recorded with its keys.
    try:
      value = reader.get_tensor(name)
    except ValueError:
      value = None
    if name.endswith('-keys') and value is not None:
      value = _table_entries(value, reader.get_tensor(
          name[:-len('keys')] + 'values'))
    found[name] = [dtypes[name].name, list(shape), observe.plain(value)]
  return found


def _table_entries(keys, values):
  """A dense hash table's entries (not its empty or deleted buckets), by
  key: their order in the buckets is the table's business."""
  used = ~np.all(keys == 0, axis=1) & ~np.all(keys == 1, axis=1)
  return sorted([list(map(int, k)), list(map(float, v))]
                for k, v in zip(keys[used], values[used]))


def run_cell(cell, work_dir, resume_from=None):
  """The observables of one cell (see the module docstring)."""
  model_dir = os.path.join(work_dir, cell.name)
  record = {}
  warm = None
  # Keras layers' unseeded initializers (the RNN's) draw Python-random seeds.
  tf.keras.utils.set_random_seed(11)
  if resume_from:
    regenerate.copy_checkpoint(os.path.join(resume_from, cell.name),
                               model_dir)
    record['restored'] = _variables(model_dir)
  elif cell.warm_start:
    warm = tf.estimator.WarmStartSettings(
        write_initial_checkpoint(cell, work_dir), vars_to_warm_start='.*')
  config = tf.estimator.RunConfig(tf_random_seed=11, save_summary_steps=1,
                                  log_step_count_steps=None)
  est = cell.build(model_dir, warm, config)
  losses = []
  est.train(canned_cells.input_fn('train', cell),
            steps=canned_cells.STEPS, hooks=[LossRecorder(losses)])
  record['losses'] = losses
  record['variables'] = _variables(model_dir)
  record['metrics'] = observe.plain(est.evaluate(
      canned_cells.input_fn('eval', cell)))
  record['predictions'] = [
      observe.plain(p) for p in est.predict(
          canned_cells.input_fn('predict', cell))][:6]
  record['summaries'] = observe.events(model_dir)
  if cell.export and not resume_from:
    path = est.export_saved_model(os.path.join(work_dir, '_export',
                                               cell.name),
                                  _serving_fn(cell, work_dir))
    record['export'] = observe.export(
        path.decode() if isinstance(path, bytes) else path,
        serving_feed(cell))
  return record


def main(argv):
  del argv
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  v1.logging.set_verbosity(v1.logging.ERROR)
  all_cells = canned_cells.cells(FLAGS.work_dir)
  names = FLAGS.cells or list(all_cells)
  resume_from = FLAGS.from_dir if FLAGS.phase == 'resume' else None
  results = {}
  for name in names:
    try:
      results[name] = run_cell(all_cells[name], FLAGS.work_dir, resume_from)
    except Exception as e:  # pylint: disable=broad-except
      results[name] = {'error': f'{type(e).__name__}: {str(e)[:600]}'}
      if FLAGS.verbose:
        raise
  with open(FLAGS.out, 'w') as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == '__main__':
  flags.mark_flags_as_required(['out', 'work_dir'])
  app.run(main)
