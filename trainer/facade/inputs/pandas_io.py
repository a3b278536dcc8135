"""tf.compat.v1.estimator.inputs.pandas_input_fn: a pandas DataFrame fed as
numpy_io.py feeds arrays (same arguments, checks and results as
tensorflow_estimator's; batches from tf.data).
"""

import collections
import importlib.util
import uuid

import numpy as np

from trainer.facade.inputs import numpy_io

# Whether pandas is installed (found, not imported: importing it is slow).
HAS_PANDAS = importlib.util.find_spec('pandas') is not None


def _get_unique_target_key(features, target_column_name):
  """target_column_name, or it with a uuid appended if `features` (a
  DataFrame) has a column of that name."""
  if target_column_name in features:
    target_column_name += '_' + str(uuid.uuid4())
  return target_column_name


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                    queue_capacity=1000, num_threads=1,
                    target_column='target'):
  """An input_fn feeding a pandas DataFrame: () -> features or (features,
  target); `y` a Series or DataFrame with x's index."""
  del num_threads
  try:
    import pandas as pd  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise TypeError(
        'pandas_input_fn should not be called without pandas installed') from e
  numpy_io.check_shuffle(shuffle)
  if not isinstance(target_column, str):
    raise TypeError('target_column must be a string type')
  x = x.copy()
  y_columns = None
  if y is not None:
    if target_column in x:
      raise ValueError(
          f'Cannot use name {target_column} for target column: DataFrame '
          f'already has a column with that name: {x.columns}')
    if not np.array_equal(x.index, y.index):
      raise ValueError('Index for x and y are mismatched.\nIndex for x: '
                       f'{x.index}\nIndex for y: {y.index}\n')
    if isinstance(y, pd.DataFrame):
      y_columns = [(column, _get_unique_target_key(x, column))
                   for column in list(y)]
      target_column = [name for _, name in y_columns]
      x[target_column] = y
    else:
      x[target_column] = y
  if queue_capacity is None:
    queue_capacity = 4 * len(x) if shuffle else len(x)

  def input_fn():
    data = collections.OrderedDict(
        (column, x[column].values) for column in x.columns)
    features = dict(numpy_io.next_batch(data, batch_size, num_epochs,
                                        shuffle, queue_capacity))
    features = {column: features[column] for column in x.columns}
    if y is None:
      return features
    if isinstance(target_column, list):
      target = {key: features.pop(name) for key, name in y_columns}
    else:
      target = features.pop(target_column)
    return features, target

  return input_fn
