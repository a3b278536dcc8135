"""The canned-Estimator matrix: tiny data, feature columns and one cell per
(Estimator family, feature-column kinds, head, v1/v2 API).

Every cell builds its Estimator from the API the lane gives a program
(`tf.estimator` / `tf.compat.v1.estimator`: the real one on TF 2.15, the
facade's on TF >= 2.16) and the lane's own `tf.feature_column`, so the same
code runs on both. canned_program.py runs them and records what a user sees.
"""

import dataclasses
from typing import Any, Callable

import numpy as np
import tensorflow as tf

N = 12  # Examples; batches of BATCH, so STEPS steps are two epochs.
BATCH = 4
STEPS = 6
_rng = np.random.RandomState(3)
OCCUPATIONS = ['doctor', 'lawyer', 'consultant', 'engineer']
CITIES = ['paris', 'rome', 'oslo', 'lima', 'kyiv']
LANGS = ['en', 'fr', 'de']
TAGS = ['a', 'b', 'c', 'd']


def _pick(values, shape):
  return np.array(values)[_rng.randint(0, len(values), size=shape)]


def _tags():
  """[N, 3] tag strings, '' padding (multivalent), and their weights."""
  tags = _pick(TAGS, (N, 3))
  tags[_rng.uniform(size=(N, 3)) < 0.35] = ''
  tags[:, 0] = _pick(TAGS, N)  # At least one tag per example.
  weights = np.where(tags == '', 0., _rng.uniform(0.5, 2., (N, 3)))
  return tags, weights.astype(np.float32)


TAG_VALUES, TAG_WEIGHTS = _tags()
FEATURES = {
    'x': _rng.normal(size=(N, 2)).astype(np.float32),
    'age': _rng.uniform(18, 70, size=(N, 1)).astype(np.float32),
    'occupation': _pick(OCCUPATIONS + ['pilot'], (N, 1)),  # 'pilot': OOV.
    'city': _pick(CITIES, (N, 1)),
    'lang': _pick(LANGS, (N, 1)),
    'ids': _rng.randint(0, 5, size=(N, 1)).astype(np.int64),
    'tags': TAG_VALUES,
    'tag_w': TAG_WEIGHTS,
    'w': _rng.uniform(0.5, 2., size=(N, 1)).astype(np.float32),
    'example_id': np.array([f'id{i}' for i in range(N)]),  # [N]: SDCA's.
}
_score = (FEATURES['x'] @ np.array([[1.], [-1.]]) +
          (FEATURES['age'] - 40.) / 20. +
          (FEATURES['occupation'] == 'doctor'))
LABELS = {
    'binary': (_score > 0).astype(np.int64),
    'classes': np.digitize(_score, [-0.5, 0.7]).astype(np.int64),
    'class_names': np.array([['low', 'mid', 'high'][int(i)]
                             for i in np.digitize(_score[:, 0], [-0.5, 0.7])]
                            ).reshape(N, 1),
    'multi_hot': (np.concatenate([_score, -_score, _score - 0.5], 1) > 0
                  ).astype(np.int64),
    'regression': _score.astype(np.float32),
    'regression2': np.concatenate([_score, 0.5 * _score], 1).astype(
        np.float32),
    'counts': np.round(np.exp(np.clip(_score, -1, 1.5))).astype(np.float32),
}
# RNN: token-id sequences of 1 to 4 steps (-1 pads, dropped) and a value
# per step.
_lengths = _rng.randint(1, 5, size=N)
TOKENS = np.where(np.arange(4)[None, :] < _lengths[:, None],
                  _rng.randint(0, 6, size=(N, 4)), -1).astype(np.int64)
STEP_VALUES = np.where(TOKENS >= 0, _rng.normal(size=(N, 4)), 0.).astype(
    np.float32)


def input_fn(mode, cell, batch=BATCH):
  """An input_fn of the cell's features (and labels but in predict)."""
  features = {k: FEATURES[k] for k in cell.features}
  labels = LABELS[cell.labels]

  def fn():
    feature_ds = dict(features)
    if cell.sequence:
      feature_ds['tokens'] = TOKENS
      feature_ds['step_values'] = STEP_VALUES
    if mode == 'predict':
      ds = tf.data.Dataset.from_tensor_slices(feature_ds)
    else:
      ds = tf.data.Dataset.from_tensor_slices((feature_ds, labels))
    ds = ds.batch(batch)
    if cell.sequence:
      ds = ds.map(_sequences_as_sparse)
    return ds.repeat() if mode == 'train' else ds

  return fn


def _sequences_as_sparse(features, labels=None):
  """Sequence columns read SparseTensors: the steps where tokens >= 0."""
  features = dict(features)
  steps = tf.where(features['tokens'] >= 0)
  # As parsing VarLenFeatures gives them: as long as the batch's longest.
  shape = tf.stack([tf.shape(features['tokens'], out_type=tf.int64)[0],
                    tf.reduce_max(steps[:, 1]) + 1])
  for key in ('tokens', 'step_values'):
    features[key] = tf.SparseTensor(
        steps, tf.gather_nd(features[key], steps), shape)
  return features if labels is None else (features, labels)


@dataclasses.dataclass(frozen=True)
class Cell:
  """One canned program: build(model_dir, warm_start_from, config) -> est."""
  name: str
  description: str
  build: Callable[..., Any]
  features: tuple
  labels: str
  export: bool = True
  warm_start: bool = True  # Start from the deterministic initial values.
  sequence: bool = False
  kinds: tuple = ()  # Its feature-column kinds (see columns()).
  # False: the reference itself differs run to run (its SDCA op visits a
  # batch's examples in random order); values compare loosely.
  exact: bool = True


def _fc(v1=False):
  return tf.compat.v1.feature_column if v1 else tf.feature_column


def _vocab_file(tmp_dir):
  import os  # pylint: disable=g-import-not-at-top
  path = os.path.join(tmp_dir, 'langs.txt')
  with open(path, 'w') as f:
    f.write('\n'.join(LANGS) + '\n')
  return path


def columns(kind, work_dir, v1=False):
  """The feature columns of a kind (see CELLS)."""
  fc = _fc(v1)
  x = fc.numeric_column('x', shape=[2])
  age = fc.numeric_column('age')
  age_buckets = fc.bucketized_column(age, [25., 40., 55.])
  occupation = fc.categorical_column_with_vocabulary_list(
      'occupation', OCCUPATIONS, num_oov_buckets=1)
  city = fc.categorical_column_with_hash_bucket('city', 7)
  lang = fc.categorical_column_with_vocabulary_file(
      'lang', _vocab_file(work_dir), vocabulary_size=len(LANGS))
  ids = fc.categorical_column_with_identity('ids', 5)
  tags = fc.categorical_column_with_vocabulary_list('tags', TAGS)
  crossed = fc.crossed_column([age_buckets, 'city'], 11)
  if kind == 'dnn':
    return [x, fc.embedding_column(city, 3), fc.indicator_column(occupation),
            fc.embedding_column(ids, 2, combiner='sqrtn')]
  if kind == 'dnn_shared':
    # Shared embeddings are made in a graph (TF refuses them eagerly).
    with tf.Graph().as_default():
      shared = (fc.shared_embedding_columns if v1 else fc.shared_embeddings)(
          [occupation, fc.categorical_column_with_vocabulary_list(
              'city', CITIES)], 3)
    return [age, age_buckets] + list(shared) + [fc.indicator_column(tags)]
  if kind == 'dnn_crossed':
    return [x, fc.indicator_column(crossed), fc.indicator_column(
        fc.weighted_categorical_column(tags, 'tag_w'))]
  if kind == 'linear':
    return [x, age_buckets, city, lang, ids, crossed,
            fc.weighted_categorical_column(tags, 'tag_w')]
  if kind == 'linear_small':
    return [x, city, tags]
  if kind == 'sdca':
    return [x, age_buckets, city, occupation]
  if kind == 'wide':
    return [age_buckets, city, crossed, occupation]
  if kind == 'deep':
    return [x, fc.embedding_column(city, 3), fc.embedding_column(occupation,
                                                                  2)]
  raise ValueError(kind)


def _sequence_columns():
  fc = tf.feature_column
  tokens = fc.sequence_categorical_column_with_identity('tokens', 6)
  return [fc.embedding_column(tokens, 3),
          fc.sequence_numeric_column('step_values')]


def _estimators(v1=False):
  return tf.compat.v1.estimator if v1 else tf.estimator


def _cells(work_dir):
  """The matrix (see the module docstring)."""
  est, est1 = _estimators(), _estimators(v1=True)
  fc = tf.feature_column
  sum_reduction = tf.keras.losses.Reduction.SUM
  keras_opt = tf.keras.optimizers.legacy

  def cols(kind, v1=False):
    return columns(kind, work_dir, v1)

  base = ('x', 'age', 'occupation', 'city', 'lang', 'ids', 'tags', 'tag_w',
          'w')
  return [
      Cell('dnn_classifier', 'DNNClassifier: numeric, embedded hashed and '
           'identity, indicator of a vocabulary list; weight column',
           lambda d, w, c: est.DNNClassifier(
               [4, 3], cols('dnn'), model_dir=d, weight_column='w',
               warm_start_from=w, config=c), base, 'binary',
           kinds=('dnn',)),
      Cell('dnn_classifier_vocab_batch_norm', 'DNNClassifier: 3 string '
           'classes, shared embeddings, bucketized, indicator of a multivalent '
           'column, batch norm, tanh, Adagrad by callable, loss SUM',
           lambda d, w, c: est.DNNClassifier(
               [3], cols('dnn_shared'), model_dir=d, n_classes=3,
               label_vocabulary=['low', 'mid', 'high'],
               activation_fn=tf.nn.tanh, batch_norm=True,
               optimizer=lambda: keras_opt.Adagrad(0.05),
               loss_reduction=sum_reduction, warm_start_from=w, config=c),
           base, 'class_names',
           kinds=('dnn_shared',)),
      Cell('dnn_regressor', 'DNNRegressor: 2 targets, indicator of a crossed '
           'and of a weighted categorical column, RMSProp by name',
           lambda d, w, c: est.DNNRegressor(
               [3], cols('dnn_crossed'), model_dir=d, label_dimension=2,
               optimizer='RMSProp', warm_start_from=w, config=c),
           base, 'regression2',
           kinds=('dnn_crossed',)),
      Cell('dnn_estimator_multi_label', 'DNNEstimator with a MultiLabelHead, '
           'Adam by name',
           lambda d, w, c: est.DNNEstimator(
               est.MultiLabelHead(3), [3], cols('dnn'), model_dir=d,
               optimizer='Adam', warm_start_from=w, config=c), base,
           'multi_hot',
           kinds=('dnn',)),
      Cell('linear_classifier', 'LinearClassifier: numeric, bucketized, '
           'hashed, vocabulary file, identity, crossed, weighted '
           "categorical; sparse_combiner 'mean'; numeric weight column",
           lambda d, w, c: est.LinearClassifier(
               cols('linear'), model_dir=d,
               weight_column=fc.numeric_column('w'), sparse_combiner='mean',
               warm_start_from=w, config=c), base, 'binary',
           kinds=('linear',)),
      Cell('linear_classifier_multi_class', "LinearClassifier: 3 classes, "
           "'sqrtn', Ftrl instance with L1",
           lambda d, w, c: est.LinearClassifier(
               cols('linear_small'), model_dir=d, n_classes=3,
               sparse_combiner='sqrtn',
               optimizer=keras_opt.Ftrl(0.1, l1_regularization_strength=0.01),
               warm_start_from=w, config=c), base, 'classes',
           kinds=('linear_small',)),
      Cell('linear_regressor', 'LinearRegressor: SGD by name, weight column',
           lambda d, w, c: est.LinearRegressor(
               cols('linear_small'), model_dir=d, weight_column='w',
               optimizer='SGD', warm_start_from=w, config=c),
           base, 'regression',
           kinds=('linear_small',)),
      Cell('linear_estimator_poisson', 'LinearEstimator with a '
           'PoissonRegressionHead',
           lambda d, w, c: est.LinearEstimator(
               est.PoissonRegressionHead(), cols('linear_small'),
               model_dir=d, warm_start_from=w, config=c), base, 'counts',
           kinds=('linear_small',)),
      Cell('linear_sdca', 'LinearClassifier trained by LinearSDCA',
           lambda d, w, c: est.LinearClassifier(
               cols('sdca'), model_dir=d,
               optimizer=tf.estimator.experimental.LinearSDCA(
                   'example_id', symmetric_l2_regularization=2.,
                   symmetric_l1_regularization=0.1),
               config=c), base + ('example_id',), 'binary',
           warm_start=False, exact=False,
           kinds=('sdca',)),
      Cell('wide_deep_classifier', 'DNNLinearCombinedClassifier: '
           'bucketized, hashed, crossed and vocabulary wide; embedded deep; '
           '3 classes',
           lambda d, w, c: est.DNNLinearCombinedClassifier(
               model_dir=d, linear_feature_columns=cols('wide'),
               dnn_feature_columns=cols('deep'), dnn_hidden_units=[4],
               n_classes=3, warm_start_from=w, config=c), base, 'classes',
           kinds=('wide', 'deep')),
      Cell('wide_deep_regressor', 'DNNLinearCombinedRegressor: weight '
           "column, linear_sparse_combiner 'sqrtn', dropout-free relu DNN",
           lambda d, w, c: est.DNNLinearCombinedRegressor(
               model_dir=d, linear_feature_columns=cols('linear_small'),
               dnn_feature_columns=cols('deep'), dnn_hidden_units=[3, 2],
               weight_column='w', linear_sparse_combiner='sqrtn',
               linear_optimizer='Adagrad', dnn_optimizer='SGD',
               warm_start_from=w, config=c), base, 'regression',
           kinds=('linear_small', 'deep')),
      Cell('baseline_classifier', 'BaselineClassifier, 3 classes, weight '
           'column',
           lambda d, w, c: est.BaselineClassifier(
               model_dir=d, n_classes=3, weight_column='w', config=c),
           ('age', 'w'), 'classes', warm_start=False),
      Cell('baseline_regressor', 'BaselineRegressor, Adagrad by name',
           lambda d, w, c: est.BaselineRegressor(
               model_dir=d, optimizer='Adagrad', config=c), ('age',),
           'regression', warm_start=False),
      Cell('rnn_classifier', 'RNNClassifier: LSTM over an embedded sequence '
           'and a sequence numeric column',
           lambda d, w, c: est.experimental.RNNClassifier(
               _sequence_columns(), units=3, cell_type='lstm', model_dir=d,
               config=c),
           (), 'binary', export=False, sequence=True),
      Cell('dnn_classifier_v1', 'tf.compat.v1 DNNClassifier: v1 columns, '
           'shared embeddings, input_layer_partitioner',
           lambda d, w, c: est1.DNNClassifier(
               [3], cols('dnn_shared', v1=True), model_dir=d,
               input_layer_partitioner=(
                   tf.compat.v1.fixed_size_partitioner(2)),
               warm_start_from=w, config=c), base, 'binary',
           kinds=('dnn_shared',)),
      Cell('linear_classifier_v1', 'tf.compat.v1 LinearClassifier: v1 '
           'columns, a 2-way partitioner, Ftrl by name',
           lambda d, w, c: est1.LinearClassifier(
               cols('linear', v1=True), model_dir=d,
               partitioner=tf.compat.v1.fixed_size_partitioner(2),
               warm_start_from=w, config=c), base, 'binary',
           kinds=('linear',)),
      Cell('wide_deep_classifier_v1', 'tf.compat.v1 '
           'DNNLinearCombinedClassifier on v1 columns',
           lambda d, w, c: est1.DNNLinearCombinedClassifier(
               model_dir=d, linear_feature_columns=cols('wide', v1=True),
               dnn_feature_columns=cols('deep', v1=True),
               dnn_hidden_units=[3], warm_start_from=w, config=c),
           base, 'binary',
           kinds=('wide', 'deep')),
      Cell('baseline_regressor_v1', 'tf.compat.v1 BaselineRegressor',
           lambda d, w, c: est1.BaselineRegressor(
               model_dir=d, label_dimension=2, config=c), ('age',),
           'regression2', warm_start=False),
  ]


def cells(work_dir):
  """{name: Cell}."""
  return {c.name: c for c in _cells(work_dir)}


def parse_spec(cell, work_dir):
  """The tf.io.parse_example spec serving the cell: its columns' (the v2
  ones of its kinds), else one fixed-length feature per feature array."""
  found = [c for kind in cell.kinds for c in columns(kind, work_dir)]
  if found:
    return tf.feature_column.make_parse_example_spec(found)
  spec = {}
  for key in cell.features:
    if key != 'example_id':
      value = FEATURES[key]
      dtype = tf.float32 if value.dtype.kind == 'f' else (
          tf.int64 if value.dtype.kind == 'i' else tf.string)
      spec[key] = tf.io.FixedLenFeature(value.shape[1:], dtype)
  return spec
