"""TensorFlow's TPU embedding feature-column classes, for the facade.

tf.compat.v1.tpu.experimental.embedding_column and shared_embedding_columns
return private classes of tensorflow.python.tpu.feature_column(_v2), which
tensorflow_estimator's EmbeddingConfigSpec checks columns against; TF 2.15,
2.20 and 2.21 ship them. Importing this module changes nothing.
"""

# pylint: disable=g-direct-tensorflow-import,protected-access
from tensorflow.python.feature_column import feature_column as _core_fc
from tensorflow.python.feature_column import feature_column_lib as _core_fc_lib
from tensorflow.python.tpu import feature_column as _tpu_fc
from tensorflow.python.tpu import feature_column_v2 as _tpu_fc_v2
# pylint: enable=g-direct-tensorflow-import

TPU_EMBEDDING_COLUMNS = (_tpu_fc._TPUEmbeddingColumn,
                         _tpu_fc._TPUSharedEmbeddingColumn,
                         _tpu_fc_v2._TPUEmbeddingColumnV2,
                         _tpu_fc_v2._TPUSharedEmbeddingColumnV2)
# Those the TF2 configs are made from (the v1 ones are deprecated there).
TPU_EMBEDDING_COLUMNS_V2 = (_tpu_fc_v2._TPUEmbeddingColumnV2,
                            _tpu_fc_v2._TPUSharedEmbeddingColumnV2)
TPU_DEVICE_SPECIFIC_COLUMNS = (
    _tpu_fc_v2._TPUDeviceSpecificEmbeddingColumnV2,
    _tpu_fc_v2._TPUSharedDeviceSpecificEmbeddingColumnV2)
EMBEDDING_COLUMNS = (_core_fc._EmbeddingColumn, _core_fc_lib.EmbeddingColumn,
                     _core_fc._SharedEmbeddingColumn)
NUMERIC_COLUMNS = (_core_fc._NumericColumn, _core_fc_lib.NumericColumn)
TENSOR_CORE = _tpu_fc_v2.EmbeddingDevice.TPU_TENSOR_CORE


def lookup_device(column):
  """Where a device-specific TPU embedding column looks its ids up."""
  return column._embedding_lookup_device
