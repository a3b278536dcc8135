"""TPUEstimator(embedding_config_spec=...) off TPU, recording what a user
observes, as JSON.

Run it as `python -m trainer.legacy tpu_embedding_program.py --out=F
--work_dir=D` on TF 2.15 (the real TPUEstimator: regenerate.py writes
golden/tpu_embedding.json) and on TF >= 2.16 (the facade:
tpu_embedding_test.py compares). Cells train a TPUEstimator(use_tpu=False)
whose model_fn reads TPU embedding feature columns
(tf.compat.v1.tpu.experimental.embedding_column, shared_embedding_columns)
or does its own lookups, given an EmbeddingConfigSpec of columns with a
table optimizer (Adagrad, Adam, FTRL, SGD of tf.compat.v1.tpu.experimental)
or of feature and table configs (tensorflow.python.tpu.tpu_embedding), and
record the checkpoint (names, shapes, values), the summaries (`loss` of
every step), evaluate(), predict() and the exported signature's outputs.
`errors` records the message of every misconfiguration case (specs,
table optimizers, configs, TPUEstimator arguments).
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
from tests.facade import tpu_checks
# pylint: enable=g-import-not-at-top,wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string('out', None, 'Where to write the JSON record.')
flags.DEFINE_string('work_dir', None, 'Model dirs and exports go here.')
flags.DEFINE_bool('verbose', False, 'Raise the first error of a cell.')

v1 = tf.compat.v1
STEPS, BATCH = 5, 4
IDS = np.array([[1, 3], [5, 0], [7, 7], [2, 9], [4, 1], [8, 6], [0, 2],
                [3, 5]], np.int64)
WORDS = np.array([['a', 'b'], ['c', 'a'], ['b', 'b'], ['d', 'c'], ['a', 'd'],
                  ['c', 'c'], ['d', 'a'], ['b', 'd']])
X = np.linspace(-1, 1, 8, dtype=np.float32).reshape(8, 1)
Y = np.array([[1.], [0.], [1.], [0.], [1.], [1.], [0.], [0.]], np.float32)


def _table_initializer(rows, dim):
  return v1.constant_initializer(
      np.linspace(-0.5, 0.5, rows * dim).reshape(rows, dim))


def _columns(cell):
  fc = tf.feature_column
  tpu = v1.tpu.experimental
  if cell == 'shared_adam':
    a = fc.categorical_column_with_vocabulary_list('w1', ['a', 'b', 'c', 'd'])
    b = fc.categorical_column_with_vocabulary_list('w2', ['a', 'b', 'c', 'd'])
    return tpu.shared_embedding_columns(
        [a, b], dimension=3, combiner='sum',
        initializer=_table_initializer(4, 3)), [fc.numeric_column('x')]
  ids = fc.categorical_column_with_identity('ids', 10)
  return [tpu.embedding_column(ids, dimension=4, combiner='mean',
                               initializer=_table_initializer(10, 4))], [
                                   fc.numeric_column('x')]


def _optimizer(cell):
  tpu = v1.tpu.experimental
  return {'column_adagrad': tpu.AdagradParameters(0.1),
          'shared_adam': tpu.AdamParameters(0.05),
          'column_ftrl': tpu.FtrlParameters(0.1),
          'column_sgd': tpu.StochasticGradientDescentParameters(0.1)}[cell]


def _spec(cell):
  tpu = v1.estimator.tpu.experimental
  if cell == 'configs':
    from tensorflow.python.tpu import tpu_embedding  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
    return tpu.EmbeddingConfigSpec(
        feature_to_config_dict={'ids': tpu_embedding.FeatureConfig('tbl')},
        table_to_config_dict={'tbl': tpu_embedding.TableConfig(10, 4)},
        optimization_parameters=(
            v1.tpu.experimental.StochasticGradientDescentParameters(0.1)))
  return tpu.EmbeddingConfigSpec(feature_columns=_columns(cell)[0],
                                 optimization_parameters=_optimizer(cell))


def _model_fn(cell):

  def model_fn(features, labels, mode, params):
    del params
    if cell == 'configs':  # The model's own lookup, as such programs do.
      table = v1.get_variable('tbl', [10, 4],
                              initializer=_table_initializer(10, 4))
      net = tf.concat([tf.reduce_mean(tf.nn.embedding_lookup(
          table, features['ids']), axis=1), features['x']], axis=1)
    else:
      embedded, dense = _columns(cell)
      net = v1.keras.layers.DenseFeatures(embedded + dense)(features)
    logits = v1.layers.dense(net, 1, kernel_initializer=v1.constant_initializer(
        0.3))
    spec = v1.estimator.tpu.TPUEstimatorSpec
    if mode == 'infer':
      return spec(mode, predictions={'logits': logits})
    loss = v1.losses.sigmoid_cross_entropy(labels, logits)
    if mode == 'eval':
      return spec(mode, loss=loss, eval_metrics=(
          lambda labels, logits: {'auc': v1.metrics.auc(
              labels, tf.sigmoid(logits))}, [labels, logits]))
    train_op = v1.train.AdagradOptimizer(0.1).minimize(
        loss, v1.train.get_global_step())
    return spec(mode, loss=loss, train_op=train_op)

  return model_fn


def _features():
  return {'ids': IDS, 'w1': WORDS[:, :1], 'w2': WORDS[:, 1:], 'x': X}


def _input_fn(mode):

  def input_fn(params):
    data = tf.data.Dataset.from_tensor_slices(
        _features() if mode == 'predict' else (_features(), Y))
    if mode == 'train':
      data = data.repeat()
    return data.batch(params['batch_size'], drop_remainder=True)

  return input_fn


def _serving_fn():
  spec = {'ids': tf.io.FixedLenFeature([2], tf.int64),
          'w1': tf.io.FixedLenFeature([1], tf.string),
          'w2': tf.io.FixedLenFeature([1], tf.string),
          'x': tf.io.FixedLenFeature([1], tf.float32)}
  return tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)


def _feed():
  examples = [tf.train.Example(features=tf.train.Features(feature={
      'ids': tf.train.Feature(int64_list=tf.train.Int64List(value=IDS[i])),
      'w1': tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[WORDS[i, 0].encode()])),
      'w2': tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[WORDS[i, 1].encode()])),
      'x': tf.train.Feature(float_list=tf.train.FloatList(value=X[i]))
  })).SerializeToString() for i in range(3)]
  return {'examples': examples, 'inputs': examples}


def _estimator(cell, model_dir, **kwargs):
  tpu = v1.estimator.tpu
  config = tpu.RunConfig(model_dir=model_dir, tf_random_seed=3,
                         save_summary_steps=1, log_step_count_steps=None)
  return tpu.TPUEstimator(
      model_fn=_model_fn(cell), config=config, use_tpu=False,
      train_batch_size=BATCH, eval_batch_size=BATCH, predict_batch_size=BATCH,
      embedding_config_spec=_spec(cell), export_to_tpu=False, **kwargs)


def run_cell(cell, work_dir):
  model_dir = os.path.join(work_dir, cell)
  est = _estimator(cell, model_dir)
  est.train(_input_fn('train'), steps=STEPS)
  record = {'variables': observe.checkpoint(model_dir)['variables'],
            'metrics': observe.plain(est.evaluate(_input_fn('eval'))),
            'predictions': [observe.plain(p) for p in est.predict(
                _input_fn('predict'))],
            'summaries': observe.events(model_dir)}
  path = est.export_saved_model(os.path.join(work_dir, '_export', cell),
                                _serving_fn())
  record['export'] = observe.export(
      path.decode() if isinstance(path, bytes) else path, _feed())
  return record


def _error_cases():
  """{case: a call that misconfigures}, as a user would write them."""
  tpu = v1.tpu.experimental
  spec = v1.estimator.tpu.experimental.EmbeddingConfigSpec
  columns = lambda: _columns('column_adagrad')[0]  # pylint: disable=unnecessary-lambda-assignment
  adagrad = lambda: tpu.AdagradParameters(0.1)  # pylint: disable=unnecessary-lambda-assignment

  def tpu_embedding():
    from tensorflow.python.tpu import tpu_embedding as module  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
    return module

  def estimator(cell_spec, **kwargs):
    tpu_est = v1.estimator.tpu
    config_kwargs = kwargs.pop('tpu_config', {})
    return tpu_est.TPUEstimator(
        model_fn=_model_fn('column_adagrad'), use_tpu=kwargs.pop(
            'use_tpu', False),
        config=tpu_est.RunConfig(tpu_config=tpu_est.TPUConfig(
            **config_kwargs)), train_batch_size=BATCH,
        embedding_config_spec=cell_spec, **kwargs)

  return {
      'spec_nothing': lambda: spec(),
      'spec_both': lambda: spec(
          feature_columns=columns(), optimization_parameters=adagrad(),
          feature_to_config_dict={'ids': tpu_embedding().FeatureConfig('t')},
          table_to_config_dict={'t': tpu_embedding().TableConfig(10, 4)}),
      'spec_partition_strategy': lambda: spec(
          feature_columns=columns(), optimization_parameters=adagrad(),
          partition_strategy='range'),
      'spec_no_optimizer': lambda: spec(feature_columns=columns()),
      'spec_unsupported_column': lambda: spec(
          feature_columns=[tf.feature_column.bucketized_column(
              tf.feature_column.numeric_column('x'), [0.])],
          optimization_parameters=adagrad()),
      'spec_unknown_table': lambda: spec(
          feature_to_config_dict={'ids': tpu_embedding().FeatureConfig('t')},
          table_to_config_dict={'u': tpu_embedding().TableConfig(10, 4)}),
      'spec_feature_config_type': lambda: spec(
          feature_to_config_dict={'ids': ('t',)},
          table_to_config_dict={'t': tpu_embedding().TableConfig(10, 4)}),
      'adagrad_accumulator': lambda: tpu.AdagradParameters(
          0.1, initial_accumulator=0.),
      'adam_beta1': lambda: tpu.AdamParameters(0.1, beta1=1.0),
      'adam_not_lazy': lambda: tpu.AdamParameters(
          0.1, lazy_adam=False, use_gradient_accumulation=False),
      'ftrl_power': lambda: tpu.FtrlParameters(0.1, learning_rate_power=0.5),
      'sgd_clipping': lambda: tpu.StochasticGradientDescentParameters(
          0.1, use_gradient_accumulation=False, clip_gradient_min=-1.),
      'table_vocabulary': lambda: tpu_embedding().TableConfig(0, 4),
      'table_combiner': lambda: tpu_embedding().TableConfig(
          10, 4, combiner='max'),
      'feature_sequence_length': lambda: tpu_embedding().FeatureConfig(
          't', max_sequence_length=-1),
      'mod_sharding_on_cpu': lambda: estimator(spec(
          feature_columns=columns(), optimization_parameters=adagrad(),
          partition_strategy='mod')),
      'num_shards_one': lambda: estimator(spec(
          feature_columns=columns(), optimization_parameters=adagrad()),
          tpu_config={'num_shards': 1}),
      'per_shard_input_on_tpu': lambda: estimator(spec(
          feature_columns=columns(), optimization_parameters=adagrad()),
          use_tpu=True, tpu_config={'per_host_input_for_training': False}),
  }


def errors():
  """{case: [error type, masked message]} ('no error' if it passed)."""
  found = {}
  for name, call in _error_cases().items():
    try:
      call()
      found[name] = [tpu_checks.FINE]
    except Exception as e:  # pylint: disable=broad-except
      found[name] = [type(e).__name__, tpu_checks.masked(str(e))]
  return found


CELLS = ('column_adagrad', 'shared_adam', 'column_ftrl', 'column_sgd',
         'configs')


def main(argv):
  del argv
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  v1.logging.set_verbosity(v1.logging.ERROR)
  results = {'errors': errors()}
  for cell in CELLS:
    try:
      results[cell] = run_cell(cell, FLAGS.work_dir)
    except Exception as e:  # pylint: disable=broad-except
      results[cell] = {'error': f'{type(e).__name__}: {str(e)[:600]}'}
      if FLAGS.verbose:
        raise
  with open(FLAGS.out, 'w') as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == '__main__':
  flags.mark_flags_as_required(['out', 'work_dir'])
  app.run(main)
