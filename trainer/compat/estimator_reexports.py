"""TF objects tensorflow_estimator 2.15's modules re-export, as this TF has
them, for the facade's modules of the same paths (the names are the
reference's; inventory.json records them):

  * export/export_lib and export_output: TF core's export output classes
    (TrainOutput, _SupervisedOutput) and export_utils' helpers and mode
    maps (EXPORT_TAG_MAP, SIGNATURE_KEY_MAP, build_all_signature_defs, ...);
  * canned/linear_optimizer's sdca_ops: the TF ops it imports by name
    (internal_convert_to_tensor, name_scope, log_poisson_loss,
    sigmoid_cross_entropy_with_logits) and saver's BaseSaverBuilder;
  * head/base_head: feature_column's v1 _LazyBuilder and _NumericColumn;
  * estimator.py's usage gauges (TF monitoring cells; LazyGauge).
These have not changed from TF 2.15 to 2.21;
tests/facade/inventory_test.py checks each against the reference's
signature on every facade lane.
"""

# pylint: disable=g-direct-tensorflow-import,protected-access
from tensorflow.python.feature_column import feature_column as _fc_v1
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import nn as _nn
from tensorflow.python.saved_model.model_utils import export_output as _out
from tensorflow.python.saved_model.model_utils import export_utils as _utils
from tensorflow.python.training import saver as _saver

TrainOutput = _out.TrainOutput
SupervisedOutput = _out._SupervisedOutput
EXPORT_TAG_MAP = _utils.EXPORT_TAG_MAP
SIGNATURE_KEY_MAP = _utils.SIGNATURE_KEY_MAP
build_all_signature_defs = _utils.build_all_signature_defs
export_outputs_for_mode = _utils.export_outputs_for_mode
get_export_outputs = _utils.get_export_outputs
get_temp_export_dir = _utils.get_temp_export_dir
get_timestamped_export_dir = _utils.get_timestamped_export_dir

internal_convert_to_tensor = _ops.internal_convert_to_tensor
name_scope = _ops.name_scope
log_poisson_loss = _nn.log_poisson_loss
sigmoid_cross_entropy_with_logits = _nn.sigmoid_cross_entropy_with_logits
BaseSaverBuilder = _saver.BaseSaverBuilder

LazyBuilder = _fc_v1._LazyBuilder
NumericColumn = _fc_v1._NumericColumn


class _NoCell:
  """A gauge cell that keeps nothing (when TF already has the gauge)."""

  def set(self, value):
    del value

  def value(self):
    return None


class LazyGauge:
  """A TF monitoring gauge ('bool' or 'string') made on first use, so that
  importing the facade registers no metric: get_cell(*labels) is the
  gauge's cell. Where a gauge of that name exists already (the real
  Estimator imported too), cells keep nothing."""

  def __init__(self, kind, name, description, *labels):
    self._args = (kind, name, description, labels)
    self._gauge = None

  def get_cell(self, *labels):
    if self._gauge is None:
      from tensorflow.python.eager import monitoring  # pylint: disable=g-import-not-at-top
      kind, name, description, label_names = self._args
      cls = {'bool': monitoring.BoolGauge,
             'string': monitoring.StringGauge}[kind]
      try:
        self._gauge = cls(name, description, *label_names)
      except Exception:  # pylint: disable=broad-except  (already registered)
        self._gauge = False
    if self._gauge is False:
      return _NoCell()
    return self._gauge.get_cell(*labels)
