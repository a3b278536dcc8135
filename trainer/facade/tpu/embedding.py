"""tf.compat.v1.estimator.tpu.experimental.EmbeddingConfigSpec.

tensorflow_estimator 2.15's spec of a TPUEstimator's TPU embeddings: TPU
embedding feature columns (tf.compat.v1.tpu.experimental.embedding_column,
shared_embedding_columns) with one table optimizer, or feature and table
configs (tpu_embedding.FeatureConfig / TableConfig); same fields, defaults,
checks and errors. Off TPU (use_tpu=False) TPUEstimator runs the model_fn
as is: the TPU embedding columns look their ids up in ordinary variables
(`.../embedding_weights`) that the model_fn's own optimizer trains, the spec
unused but checked. `tf2_feature_configs` gives the TF2 TPU embedding
API's configs of a spec (tf.tpu.experimental.embedding, which TPUStrategy
trains with), tables named as TPUEstimator names them (`tbl_` + the
column's embedding variable name).
"""

import collections

import tensorflow as tf

from trainer.compat import tpu_feature_columns as tpu_fc
from trainer.facade.tpu import tpu_embedding

_TABLE_NAME_PREFIX = 'tbl_'


class EmbeddingConfigSpec(collections.namedtuple('EmbeddingConfigSpec', [
    'feature_columns', 'tensor_core_feature_columns',
    'optimization_parameters', 'clipping_limit',
    'pipeline_execution_with_tensor_core',
    'experimental_gradient_multiplier_fn', 'feature_to_config_dict',
    'table_to_config_dict', 'partition_strategy',
    'profile_data_directory'])):
  """The TPU embeddings of a TPUEstimator (see the module docstring)."""

  def __new__(cls, feature_columns=None, optimization_parameters=None,
              clipping_limit=None, pipeline_execution_with_tensor_core=False,
              experimental_gradient_multiplier_fn=None,
              feature_to_config_dict=None, table_to_config_dict=None,
              partition_strategy='div', profile_data_directory=None):
    configs = feature_to_config_dict and table_to_config_dict
    if (not feature_columns and not configs) or (feature_columns and
                                                 configs):
      raise ValueError('Exactly one of `feature_columns` and the pair '
                       '`feature_to_config_dict` and `table_to_config_dict` '
                       'must be be specified.')
    if partition_strategy not in ('div', 'mod'):
      raise ValueError(f'Invalid partition_strategy {partition_strategy}. '
                       'Must be one of "mod" or "div".')
    tensor_core_columns = embedding_core_columns = None
    if feature_columns:
      tensor_core_columns, embedding_core_columns = [], []
      supported = (tpu_fc.NUMERIC_COLUMNS + tpu_fc.TPU_EMBEDDING_COLUMNS +
                   tpu_fc.EMBEDDING_COLUMNS)
      for column in feature_columns:
        if isinstance(column, tpu_fc.TPU_DEVICE_SPECIFIC_COLUMNS) and (
            tpu_fc.lookup_device(column) == tpu_fc.TENSOR_CORE):
          tensor_core_columns.append(column)
        else:
          embedding_core_columns.append(column)
        if not isinstance(column, supported):
          raise TypeError('All feature columns must be supported types in '
                          f'{supported}. Got {type(column)}')
      if not isinstance(optimization_parameters,
                        tpu_embedding.SUPPORTED_OPTIMIZERS):
        raise ValueError(
            'optimization_parameters must be an instance of type '
            f'{tpu_embedding.SUPPORTED_OPTIMIZERS}. Got '
            f'{type(optimization_parameters)}.')
    else:
      _check_configs(feature_to_config_dict, table_to_config_dict)
    return super().__new__(
        cls, feature_columns=embedding_core_columns,
        tensor_core_feature_columns=tensor_core_columns,
        optimization_parameters=optimization_parameters,
        clipping_limit=clipping_limit,
        pipeline_execution_with_tensor_core=(
            pipeline_execution_with_tensor_core),
        experimental_gradient_multiplier_fn=(
            experimental_gradient_multiplier_fn),
        feature_to_config_dict=feature_to_config_dict,
        table_to_config_dict=table_to_config_dict,
        partition_strategy=partition_strategy,
        profile_data_directory=profile_data_directory)


def _check_configs(feature_to_config_dict, table_to_config_dict):
  for feature, config in feature_to_config_dict.items():
    if not isinstance(config, tpu_embedding.FeatureConfig):
      raise TypeError(f'Config for feature {feature} must be of type '
                      f'`FeatureConfig`. Got {type(config)}')
    if config.table_id not in table_to_config_dict:
      raise ValueError(f'Feature {feature} refers to table '
                       f'{config.table_id} which is not in the '
                       'table_to_config_dict.')
  for table, config in table_to_config_dict.items():
    if not isinstance(config, tpu_embedding.TableConfig):
      raise TypeError(f'Config for table {table} must be of type '
                      f'`TableConfig`. Got {type(config)}')


def configs_from_feature_columns(feature_columns):
  """({table: TableConfig}, {feature: FeatureConfig}) of TPU embedding
  columns, as TPUEstimator derives them."""
  table_to_config, feature_to_config = {}, {}
  for column in feature_columns:
    if not isinstance(column, tpu_fc.TPU_EMBEDDING_COLUMNS):
      raise TypeError(f'Unsupported feature column {type(column)}. '
                      f'Supported types are {tpu_fc.TPU_EMBEDDING_COLUMNS_V2}.')
    feature = column.get_feature_key_name()
    table = _TABLE_NAME_PREFIX + column.get_embedding_var_name()
    if feature in feature_to_config:
      raise ValueError(f'Feature column {feature} is used with multiple '
                       'embeddings and this is not supported.')
    feature_to_config[feature] = tpu_embedding.FeatureConfig(
        table_id=table, max_sequence_length=column.get_max_sequence_length(),
        weight_key=column.get_weight_key_name())
    vocabulary_size, dimension = column.get_embedding_table_size()
    table_to_config[table] = tpu_embedding.TableConfig(
        vocabulary_size=vocabulary_size, dimension=dimension,
        initializer=column.get_initializer(), combiner=column.get_combiner(),
        learning_rate_fn=column.get_learning_rate_fn())
  return table_to_config, feature_to_config


def tf2_feature_configs(spec):
  """{feature: tf.tpu.experimental.embedding.FeatureConfig} of the spec,
  for tf.tpu.experimental.embedding.TPUEmbedding under TPUStrategy: each
  table with its own optimizer, else the spec's."""
  if spec.feature_columns:
    tables, features = configs_from_feature_columns(spec.feature_columns)
  else:
    tables, features = spec.table_to_config_dict, spec.feature_to_config_dict
  api = tf.tpu.experimental.embedding
  tf2_tables = {}
  for name, table in tables.items():
    if table.learning_rate_fn is not None:
      raise NotImplementedError(
          f'TableConfig(learning_rate_fn=...) of table {name}: TF2 TPU '
          'embeddings take a learning rate callable without the global '
          'step; give the table a learning_rate.')
    parameters = table.optimization_parameters or spec.optimization_parameters
    optimizer = None
    if parameters is not None:
      optimizer = tpu_embedding.to_tf2(parameters, table.learning_rate)
    tf2_tables[name] = api.TableConfig(
        vocabulary_size=table.vocabulary_size, dim=table.dimension,
        initializer=table.initializer, optimizer=optimizer,
        combiner=table.combiner or 'sum', name=name)
  return {feature: api.FeatureConfig(
      table=tf2_tables[config.table_id],
      max_sequence_length=config.max_sequence_length, name=feature)
          for feature, config in features.items()}
