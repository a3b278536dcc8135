"""TPUEstimator(embedding_config_spec=...) through the facade against TF
2.15's (golden/tpu_embedding.json, `.venv/legacy/bin/python -m
tests.facade.regenerate tpu_embedding`).

Off TPU: tpu_embedding_program.py's cells (TPU embedding columns and shared
columns under each table optimizer, feature/table configs with the
model's own lookup) train, evaluate, predict and export as under TF 2.15
(checkpoint names, shapes and values, every step's loss, metrics,
predictions, signatures), and every misconfiguration fails with TF 2.15's
error. The TF2 TPU embedding configs the facade derives from a spec (for
TPUStrategy) are checked here on the CPU with TPUEmbeddingForServing: they
look up what the columns look up. Training on a TPU is refused by name
(not run here: no TPU).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from tests.canned import compare
from tests.facade import regenerate

with open(os.path.join(regenerate.GOLDEN, 'tpu_embedding.json')) as _f:
  GOLDEN = json.load(_f)

pytestmark = testutil.facade_lanes
v1 = tf.compat.v1


@pytest.fixture(scope='module')
def fresh(tmp_path_factory):
  return regenerate.run(
      'tpu_embedding_program.py',
      f'--work_dir={tmp_path_factory.mktemp("tpu_embedding")}')


def test_goldens_hold_what_the_cells_promise(fresh):
  assert set(GOLDEN) == set(fresh)
  assert len(GOLDEN['errors']) >= 15
  assert all(r[0] != 'no error' for r in GOLDEN['errors'].values())
  assert ('dense_features/ids_embedding/embedding_weights' in
          GOLDEN['column_adagrad']['variables'])


@pytest.mark.parametrize('cell', sorted(GOLDEN))
def test_cell_matches_tf215(fresh, cell):
  got = fresh[cell]
  assert 'error' not in got, got['error']
  diffs = compare.differences(compare.comparable('summaries', GOLDEN[cell]),
                              compare.comparable('summaries', got))
  assert not diffs, '\n'.join(diffs[:25])


def _spec_and_column():
  ids = tf.feature_column.categorical_column_with_identity('ids', 10)
  column = v1.tpu.experimental.embedding_column(
      ids, dimension=4, combiner='mean',
      initializer=v1.constant_initializer(np.arange(40.).reshape(10, 4)))
  spec = v1.estimator.tpu.experimental.EmbeddingConfigSpec(
      feature_columns=[column],
      optimization_parameters=v1.tpu.experimental.AdagradParameters(
          0.1, initial_accumulator=0.5))
  return spec, column


def test_tf2_configs_of_columns_look_up_what_the_columns_do():
  from trainer.facade.tpu import embedding  # pylint: disable=g-import-not-at-top
  spec, column = _spec_and_column()
  configs = embedding.tf2_feature_configs(spec)
  assert list(configs) == ['ids']
  table = configs['ids'].table
  assert (table.name, table.vocabulary_size, table.dim, table.combiner) == (
      'tbl_ids', 10, 4, 'mean')  # TPUEstimator's: tbl_ + the column's.
  optimizer = table.optimizer
  assert isinstance(optimizer, tf.tpu.experimental.embedding.Adagrad)
  assert optimizer.learning_rate == 0.1
  assert optimizer.initial_accumulator_value == 0.5
  ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0], [1, 1]],
                        tf.constant([1, 3, 5, 0], tf.int64), [2, 2])
  serving = tf.tpu.experimental.embedding.TPUEmbeddingForServing(
      configs, optimizer)
  looked_up = serving({'ids': ids})['ids'].numpy()
  with tf.Graph().as_default():
    dense = v1.keras.layers.DenseFeatures([column])({'ids': tf.constant(
        [[1, 3], [5, 0]], tf.int64)})
    with v1.Session() as session:
      session.run(v1.global_variables_initializer())
      expected = session.run(dense)
  np.testing.assert_allclose(looked_up, expected)


def test_tf2_configs_of_feature_and_table_configs():
  from tensorflow.python.tpu import tpu_embedding  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  from trainer.facade.tpu import embedding  # pylint: disable=g-import-not-at-top
  spec = v1.estimator.tpu.experimental.EmbeddingConfigSpec(
      feature_to_config_dict={'a': tpu_embedding.FeatureConfig('t'),
                              'b': tpu_embedding.FeatureConfig(
                                  't', max_sequence_length=3)},
      table_to_config_dict={'t': tpu_embedding.TableConfig(
          20, 8, combiner='sqrtn', learning_rate=0.5,
          optimization_parameters=tpu_embedding.AdamParameters(0.01))},
      optimization_parameters=v1.tpu.experimental.
      StochasticGradientDescentParameters(0.1))
  configs = embedding.tf2_feature_configs(spec)
  assert configs['a'].table is configs['b'].table
  assert configs['b'].max_sequence_length == 3
  table = configs['a'].table
  assert (table.vocabulary_size, table.dim, table.combiner) == (20, 8,
                                                                'sqrtn')
  assert isinstance(table.optimizer, tf.tpu.experimental.embedding.Adam)
  assert table.optimizer.learning_rate == 0.5  # The table's own rate.


def test_training_on_a_tpu_is_refused_by_name(tmp_path):
  from unittest import mock  # pylint: disable=g-import-not-at-top
  from tests.facade import tpu_checks  # pylint: disable=g-import-not-at-top
  from trainer.facade import unsupported  # pylint: disable=g-import-not-at-top
  from trainer.facade.tpu import tpu_estimator  # pylint: disable=g-import-not-at-top
  from trainer.facade.tpu import validation  # pylint: disable=g-import-not-at-top
  spec, _ = _spec_and_column()
  tpu = v1.estimator.tpu
  est = tpu.TPUEstimator(
      model_fn=tpu_checks._model_fn,  # pylint: disable=protected-access
      config=tpu.RunConfig(model_dir=str(tmp_path)), use_tpu=True,
      train_batch_size=8, embedding_config_spec=spec)
  system = validation.TPUSystem.of(tpu_checks.metadata(8, 1))
  with mock.patch.object(tpu_estimator.TPUEstimator, '_tpu_system',
                         lambda self, mode: system):
    with pytest.raises(unsupported.UnsupportedApiError,
                       match='embedding_config_spec.*on a TPU.*use_tpu=False'):
      est.train(tpu_checks._input_fn, steps=2)  # pylint: disable=protected-access
