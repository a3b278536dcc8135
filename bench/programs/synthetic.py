"""The programs' data: a fixed synthetic table of numeric, vocabulary and
free-text (hashed) features and a label that depends on them, as tf.data
input_fns, and the feature columns a canned Estimator reads it with."""

import numpy as np
import tensorflow as tf

ROWS = 4096
COLORS = ['red', 'green', 'blue', 'cyan', 'magenta', 'yellow', 'black',
          'white']
NUMERIC = ['n0', 'n1', 'n2']
DENSE_WIDTH = 16  # The custom programs' dense input width.


def table(rows=ROWS, seed=0):
  """({name: array}, labels): the same rows on every run and lane."""
  rng = np.random.RandomState(seed)
  features = {name: rng.normal(size=rows).astype(np.float32)
              for name in NUMERIC}
  color = rng.randint(len(COLORS), size=rows)
  user = rng.randint(5000, size=rows)
  features['color'] = np.array([COLORS[c] for c in color])
  features['user'] = np.array([f'user{u}' for u in user])
  labels = ((features['n0'] + features['n1'] * features['n2'] +
             (color % 3 == 0) + (user % 7 == 0)) > 0.5).astype(np.int64)
  return features, labels


def input_fn(batch_size, training, rows=ROWS):
  """A canned Estimator's input_fn: ({name: tensor}, labels) batches."""
  def fn():
    features, labels = table(rows)
    data = tf.data.Dataset.from_tensor_slices((features, labels))
    if training:
      data = data.shuffle(1024, seed=1).repeat()
    return data.batch(batch_size, drop_remainder=training)
  return fn


def feature_columns():
  """(dense columns, sparse columns): numeric, vocabulary, hashed."""
  fc = tf.feature_column
  numeric = [fc.numeric_column(name) for name in NUMERIC]
  color = fc.categorical_column_with_vocabulary_list('color', COLORS)
  user = fc.categorical_column_with_hash_bucket('user', 1000)
  dense = numeric + [fc.indicator_column(color),
                     fc.embedding_column(user, dimension=8)]
  return dense, [color, user]


def serving_example(rows=1):
  """serving_default's inputs for a parsing export: serialized Examples."""
  features, _ = table(rows, seed=1)
  examples = []
  for i in range(rows):
    feature = {name: tf.train.Feature(
        float_list=tf.train.FloatList(value=[features[name][i]]))
               for name in NUMERIC}
    for name in ('color', 'user'):
      feature[name] = tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[features[name][i].encode()]))
    examples.append(tf.train.Example(features=tf.train.Features(
        feature=feature)).SerializeToString())
  return {'inputs': tf.constant(examples)}


def dense_table(rows=ROWS, seed=0):
  """(x [rows, DENSE_WIDTH] float32, labels [rows] int64 in 0..3)."""
  rng = np.random.RandomState(seed)
  x = rng.normal(size=(rows, DENSE_WIDTH)).astype(np.float32)
  labels = (np.argmax(x[:, :4] + 0.5 * x[:, 4:8], axis=1)).astype(np.int64)
  return x, labels


def dense_input_fn(batch_size, training, rows=ROWS):
  """A custom model_fn's input_fn: ({'x': [batch, 16]}, labels)."""
  def fn(params=None):
    size = params['batch_size'] if params and 'batch_size' in params else (
        batch_size)
    x, labels = dense_table(rows)
    data = tf.data.Dataset.from_tensor_slices(({'x': x}, labels))
    if training:
      data = data.shuffle(1024, seed=1).repeat()
    return data.batch(size, drop_remainder=True)
  return fn
