"""model_to_estimator's cells, recording what a user observes, as JSON.

Run it as `python -m trainer.legacy keras_program.py --out=F --work_dir=D`
on TF 2.15 (the real model_to_estimator: tests/facade/regenerate.py writes
golden/keras.json) and on TF >= 2.16 (the facade: keras_test.py compares).
Each cell builds a compiled tf-keras model with the same initial values on
every lane (set_weights of values drawn from a fixed seed, or constant
initializers for the subclassed model, whose weights model_to_estimator
does not carry over), converts it, trains STEPS steps, evaluates, predicts
and exports, and records:
  * `keras_ckpt`: MODEL_DIR/keras's first checkpoint (names, shapes,
    values): what the Estimator warm-starts from;
  * `variables`: the final checkpoint's names, dtypes, shapes and values;
  * `summaries`: the summary tags and scalar values (the `loss` of every
    step among them);
  * `metrics`, `predictions` (the first six), `export`: the SavedModel's
    signatures and their outputs for serialized tf.Examples.
All cells run in one process whose CPU is split into 2 logical devices
(the `mirrored` cell's MirroredStrategy); --eager_strategy makes that
strategy eagerly (Estimator 2.15 hangs on it: its Session sees one CPU),
so only the facade runs it.
--from_dir=D continues each cell's model dir of the run whose work_dir was
D (another lane's) for STEPS more steps and records its checkpoint and
metrics.
--cluster makes it one task of a TF_CONFIG cluster (keras_test runs a
chief, a worker, a ps and an evaluator): see run_cluster_task.
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
from tests.conformance import observe
from trainer.runtime import strategy as strategy_lib
# pylint: enable=g-import-not-at-top,wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string('out', None, 'Where to write the JSON record.')
flags.DEFINE_string('work_dir', None, 'Model dirs and exports go here.')
flags.DEFINE_list('cells', None, 'Only these cells (default: all).')
flags.DEFINE_bool('eager_strategy', False,
                  'Make the mirrored cell\'s strategy eagerly.')
flags.DEFINE_string('from_dir', None,
                    'Resume: continue the model dirs of the run whose '
                    '--work_dir this was for STEPS more steps.')
flags.DEFINE_bool('cluster', False,
                  'Be one task of a TF_CONFIG cluster: train_and_evaluate '
                  'the functional model into --model_dir, then write this '
                  "task's observations to --out/TYPE-INDEX.json.")
flags.DEFINE_string('model_dir', None, 'The cluster\'s model_dir.')
flags.DEFINE_integer('max_steps', 30, 'The cluster\'s TrainSpec.max_steps.')
flags.DEFINE_bool('verbose', False, 'Raise the first error of a cell.')

v1 = tf.compat.v1
keras = tf.keras
STEPS = 6
BATCH = 8
N = 32


def _rng(name):
  return np.random.RandomState(zlib.crc32(name.encode()))


def _data():
  rng = _rng('data')
  x = rng.uniform(-1, 1, (N, 4)).astype(np.float32)
  labels = (x[:, 0] + 2 * x[:, 1] > 0).astype(np.int64) + (
      x[:, 2] > 0.5).astype(np.int64)
  weights = rng.uniform(0.2, 1.0, (N,)).astype(np.float32)
  b = rng.uniform(-1, 1, (N, 2)).astype(np.float32)
  return {'x': x, 'labels': labels, 'weights': weights, 'b': b,
          'c': (x[:, :1] - b[:, :1]).astype(np.float32),
          'd': (b[:, 1:] > 0).astype(np.float32)}


DATA = _data()


def _set_initial_weights(model):
  model.set_weights([_rng(f'w{i}').uniform(-0.5, 0.5, w.shape).astype(
      w.dtype.as_numpy_dtype) for i, w in enumerate(model.weights)])


def _classifier(kind, optimizer, activation='relu'):
  """A 4-8-3 softmax classifier (`kind`: functional, sequential)."""
  if kind == 'functional':
    inputs = keras.layers.Input(shape=(4,), name='x')
    hidden = keras.layers.Dense(8, activation=activation, name='hidden')(
        inputs)
    outputs = keras.layers.Dense(3, activation='softmax', name='probs')(
        hidden)
    model = keras.models.Model(inputs, outputs)
  else:
    model = keras.models.Sequential([
        keras.layers.Dense(8, activation=activation, input_shape=(4,)),
        keras.layers.Dense(3, activation='softmax')])
  model.compile(optimizer=optimizer, loss='sparse_categorical_crossentropy',
                metrics=['sparse_categorical_accuracy'])
  _set_initial_weights(model)
  return model


class _Subclassed(keras.models.Model):
  """4-8-3 with constant initial values (not carried over by
  model_to_estimator: its clone starts from its initializers)."""

  def __init__(self):
    super().__init__()
    self.hidden = keras.layers.Dense(8, activation='tanh', kernel_initializer=(
        keras.initializers.Constant(_rng('k1').uniform(-0.5, 0.5, (4, 8)))))
    self.out = keras.layers.Dense(3, activation='softmax', kernel_initializer=(
        keras.initializers.Constant(_rng('k2').uniform(-0.5, 0.5, (8, 3)))))

  def call(self, inputs):
    return self.out(self.hidden(inputs))

  def get_config(self):
    return {}

  @classmethod
  def from_config(cls, config):
    return cls()


def _multi_io():
  """Inputs x and b (a dict), outputs c (regression) and d (logistic)."""
  x = keras.layers.Input(shape=(4,), name='x')
  b = keras.layers.Input(shape=(2,), name='b')
  merged = keras.layers.concatenate(
      [keras.layers.Dense(4, activation='relu', name='mix')(x), b])
  model = keras.Model(
      inputs={'x': x, 'b': b},
      outputs={'c': keras.layers.Dense(1, name='c')(merged),
               'd': keras.layers.Dense(1, activation='sigmoid',
                                       name='d')(merged)})
  model.compile(keras.optimizers.legacy.SGD(0.05),
                {'c': 'mse', 'd': 'binary_crossentropy'},
                metrics={'c': 'mae', 'd': 'binary_accuracy'})
  _set_initial_weights(model)
  return model


def _dataset(mode, features, labels):
  data = tf.data.Dataset.from_tensor_slices(
      features if mode == 'predict' else (features, labels))
  if mode == 'train':
    data = data.repeat()
  return data.batch(BATCH)


def _input_fn(cell, mode):
  """The cell's input_fn for mode: dict or tensor features as the cell's
  model reads them; training weighted when the cell says so."""
  name = cell['name']
  if name == 'multi_io':
    features = {'x': DATA['x'], 'b': DATA['b']}
    labels = {'c': DATA['c'], 'd': DATA['d']}
  elif cell.get('dict_features'):
    features, labels = {'x': DATA['x']}, DATA['labels']
  else:
    features, labels = DATA['x'], DATA['labels']
  if mode == 'train' and cell.get('weighted'):
    features = {'features': features, 'sample_weights': DATA['weights']}
  return lambda: _dataset(mode, features, labels)


def _strategy():
  devices = ['/cpu:0', '/cpu:1']
  if FLAGS.eager_strategy:
    return tf.distribute.MirroredStrategy(devices)
  # Estimator 2.15 hangs on a strategy made eagerly over logical CPUs its
  # Session does not see; made in graph mode it trains (as its own
  # keras_distribute_strategy_test does).
  with tf.Graph().as_default():
    return tf.distribute.MirroredStrategy(devices)


def _config(cell):
  settings = dict(tf_random_seed=11, save_summary_steps=1,
                  log_step_count_steps=None)
  if cell.get('mirrored'):
    strategy = _strategy()
    settings.update(train_distribute=strategy, eval_distribute=strategy)
  return tf.estimator.RunConfig(**settings)


def _estimator(cell, model_dir):
  """The cell's Estimator, through the API the cell names."""
  name = cell['name']
  config = _config(cell)
  if name == 'functional_checkpoint':  # v2 API: object checkpoints default.
    return tf.keras.estimator.model_to_estimator(
        keras_model=_classifier('functional', keras.optimizers.legacy.Adam(
            0.02)), model_dir=model_dir, config=config)
  to_estimator = tf.compat.v1.keras.estimator.model_to_estimator
  if name in ('functional_saver', 'mirrored', 'train_and_evaluate'):
    model = _classifier('functional', keras.optimizers.legacy.Adam(0.02))
    return to_estimator(keras_model=model, model_dir=model_dir,
                        config=config, checkpoint_format='saver')
  if name == 'sequential_weighted':
    model = _classifier('sequential', keras.optimizers.legacy.RMSprop(0.01))
    return to_estimator(keras_model=model, model_dir=model_dir,
                        config=config, checkpoint_format='checkpoint')
  if name == 'subclassed':
    model = _Subclassed()
    model.compile(v1.train.GradientDescentOptimizer(0.1),
                  'sparse_categorical_crossentropy',
                  ['sparse_categorical_accuracy'])
    return to_estimator(keras_model=model, model_dir=model_dir,
                        config=config, checkpoint_format='saver')
  if name == 'multi_io':
    return to_estimator(
        keras_model=_multi_io(), model_dir=model_dir, config=config,
        checkpoint_format='saver',
        metric_names_map={'c_mae': 'c/mae', 'd_binary_accuracy': 'd/acc'},
        export_outputs={'c': tf.estimator.export.RegressionOutput,
                        'd': tf.estimator.export.ClassificationOutput})
  if name == 'from_path':
    model = _classifier('functional', keras.optimizers.legacy.Adam(0.02),
                        activation='elu')
    path = os.path.join(os.path.dirname(model_dir), 'from_path.h5')
    model.save(path)
    return to_estimator(keras_model_path=path, model_dir=model_dir,
                        config=config, checkpoint_format='saver')
  raise ValueError(name)


CELLS = [
    {'name': 'functional_saver', 'dict_features': True},
    {'name': 'functional_checkpoint', 'dict_features': True},
    {'name': 'sequential_weighted', 'weighted': True},
    {'name': 'subclassed'},
    {'name': 'multi_io'},
    {'name': 'from_path'},
    {'name': 'mirrored', 'mirrored': True},
    {'name': 'train_and_evaluate', 'dict_features': True},
]


def _tensor_receiver():
  """Features a tensor (the models that read one), fed as `x`."""
  x = tf.compat.v1.placeholder(tf.float32, [None, 4], 'x')
  return tf.estimator.export.TensorServingInputReceiver(x, {'x': x})


def _serving_fn(cell):
  if cell['name'] in ('sequential_weighted', 'subclassed'):
    return _tensor_receiver
  spec = {'x': tf.io.FixedLenFeature([4], tf.float32)}
  if cell['name'] == 'multi_io':
    spec['b'] = tf.io.FixedLenFeature([2], tf.float32)
  return tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)


def _serving_feed():
  examples = []
  for i in range(3):
    examples.append(tf.train.Example(features=tf.train.Features(feature={
        'x': tf.train.Feature(float_list=tf.train.FloatList(
            value=DATA['x'][i])),
        'b': tf.train.Feature(float_list=tf.train.FloatList(
            value=DATA['b'][i]))})).SerializeToString())
  return {'examples': examples, 'inputs': examples, 'x': DATA['x'][:3]}


def _checkpoint(path):
  """{name: [dtype, shape, values]} of a checkpoint (file prefix or dir);
  None if there is none. The object graph is recorded by name only."""
  if os.path.isdir(path):
    path = tf.train.latest_checkpoint(path)
  if path is None or not tf.io.gfile.glob(path + '*'):
    return None
  reader = tf.train.load_checkpoint(path)
  dtypes = reader.get_variable_to_dtype_map()
  found = {}
  for name, shape in tf.train.list_variables(path):
    value = (None if name == '_CHECKPOINTABLE_OBJECT_GRAPH'
             else observe.plain(reader.get_tensor(name)))
    found[name] = [dtypes[name].name, list(shape), value]
  return found


def resume_cell(cell, work_dir, from_dir):
  """Continues another run's model_dir of the cell (another lane's) for
  STEPS steps: the checkpoint and metrics after."""
  keras.backend.clear_session()
  model_dir = os.path.join(work_dir, cell['name'])
  shutil.copytree(os.path.join(from_dir, cell['name']), model_dir,
                  ignore=shutil.ignore_patterns('eval*', 'events.*',
                                                '.trainer.lock'))
  est = _estimator(cell, model_dir)
  est.train(_input_fn(cell, 'train'), steps=STEPS)
  return {'variables': _checkpoint(model_dir),
          'metrics': observe.plain(est.evaluate(_input_fn(cell, 'eval')))}


def run_cell(cell, work_dir):
  """The observables of one cell (see the module docstring)."""
  keras.backend.clear_session()
  model_dir = os.path.join(work_dir, cell['name'])
  est = _estimator(cell, model_dir)
  record = {'keras_ckpt': _checkpoint(os.path.join(model_dir, 'keras'))}
  if cell['name'] == 'train_and_evaluate':
    exporter = tf.estimator.LatestExporter('latest', _serving_fn(cell))
    result = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(_input_fn(cell, 'train'),
                                    max_steps=STEPS),
        tf.estimator.EvalSpec(_input_fn(cell, 'eval'), steps=2,
                              exporters=[exporter], throttle_secs=0))
    metrics, exports = result
    record['train_and_evaluate'] = {
        'metrics': observe.plain(metrics),
        'exports': [os.path.relpath(e.decode() if isinstance(e, bytes)
                                    else e, model_dir).split(os.sep)[:2]
                    for e in exports]}
  else:
    est.train(_input_fn(cell, 'train'), steps=STEPS)
  record['variables'] = _checkpoint(model_dir)
  record['metrics'] = observe.plain(est.evaluate(_input_fn(cell, 'eval')))
  record['predictions'] = [observe.plain(p) for p in est.predict(
      _input_fn(cell, 'predict'))][:6]
  record['summaries'] = observe.events(model_dir)
  path = est.export_saved_model(os.path.join(work_dir, '_export',
                                             cell['name']),
                                _serving_fn(cell))
  record['export'] = observe.export(
      path.decode() if isinstance(path, bytes) else path, _serving_feed())
  return record


def _names_and_shapes(path):
  found = _checkpoint(path)
  return found and {name: entry[:2] for name, entry in found.items()}


def run_cluster_task():
  """One task of train_and_evaluate on a TF_CONFIG cluster: what it
  observes (its RunConfig; the chief's first Keras checkpoint, values
  included; the model_dir's checkpoint names and shapes, the evaluator's
  metrics and exports, once it is done: asynchronous training makes the
  values differ run to run)."""
  cell = {'name': 'cluster', 'dict_features': True}
  config = tf.estimator.RunConfig(
      model_dir=FLAGS.model_dir, tf_random_seed=11,
      save_checkpoints_steps=10, log_step_count_steps=None)
  est = tf.compat.v1.keras.estimator.model_to_estimator(
      keras_model=_classifier('functional', keras.optimizers.legacy.Adam(
          0.02)), config=config, checkpoint_format='saver')
  record = {'task': [config.task_type, config.task_id],
            'is_chief': config.is_chief,
            'num_ps_replicas': config.num_ps_replicas,
            'num_worker_replicas': config.num_worker_replicas}
  if config.is_chief:
    record['keras_ckpt'] = _checkpoint(os.path.join(FLAGS.model_dir, 'keras'))
  result = tf.estimator.train_and_evaluate(
      est, tf.estimator.TrainSpec(_input_fn(cell, 'train'),
                                  max_steps=FLAGS.max_steps),
      tf.estimator.EvalSpec(
          _input_fn(cell, 'eval'), steps=2, start_delay_secs=0,
          throttle_secs=1, exporters=[tf.estimator.LatestExporter(
              'latest', _serving_fn(cell))]))
  record['returned'] = None if result is None else [
      sorted(result[0] or ()), len(result[1] or ())]
  if config.task_type == 'evaluator':
    record['variables'] = _names_and_shapes(FLAGS.model_dir)
    record['checkpoint_step'] = int(tf.train.latest_checkpoint(
        FLAGS.model_dir).rsplit('-', 1)[1])
    record['last_eval'] = {k: type(v).__name__ for k, v in
                           est.evaluate(_input_fn(cell, 'eval'),
                                        steps=1).items()}
    exports = os.path.join(FLAGS.model_dir, 'export', 'latest')
    record['export'] = sorted(tf.saved_model.load(os.path.join(
        exports, max(os.listdir(exports)))).signatures)
  return record


def main(argv):
  del argv
  if not FLAGS.cluster and not FLAGS.work_dir:
    raise app.UsageError('--work_dir is required (but with --cluster)')
  if FLAGS.cluster:
    record = run_cluster_task()
    name = '{}-{}.json'.format(*record['task'])
    with open(os.path.join(FLAGS.out, name), 'w') as f:
      json.dump(record, f, indent=1, sort_keys=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # pylint: disable=protected-access
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  v1.logging.set_verbosity(v1.logging.ERROR)
  results = {}
  for cell in CELLS:
    if FLAGS.cells and cell['name'] not in FLAGS.cells:
      continue
    try:
      if FLAGS.from_dir:
        results[cell['name']] = resume_cell(cell, FLAGS.work_dir,
                                            FLAGS.from_dir)
      else:
        results[cell['name']] = run_cell(cell, FLAGS.work_dir)
    except Exception as e:  # pylint: disable=broad-except
      results[cell['name']] = {'error': f'{type(e).__name__}: {str(e)[:600]}'}
      if FLAGS.verbose:
        raise
  with open(FLAGS.out, 'w') as f:
    json.dump(results, f, indent=1, sort_keys=True)
  sys.stdout.flush()
  sys.stderr.flush()
  # Skips the interpreter's teardown, where a MirroredStrategy's tf.data
  # iterators wait for their autotuning threads (tests/conformance/run.py).
  os._exit(0)  # pylint: disable=protected-access


if __name__ == '__main__':
  flags.mark_flags_as_required(['out'])
  strategy_lib.split_cpu(2)
  app.run(main)
