"""The TPU inference helpers of tpu_estimator (export_saved_model API V2).

With TPUEstimator(export_saved_model_api_version=ExportSavedModelApiVersion
.V2) the model_fn builds its own TPU inference graph when exporting (it is
called with params['use_tpu'] True): `inference_on_tpu` puts a computation
on a TPU core (behind a batching function when max_batch_size is set),
`model_fn_inference_on_tpu` a whole model_fn, as tensorflow_estimator's
functions of the same names do.
"""

import enum

from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.compat import tpu_rewrite as compat_tpu_inference
from trainer.engines.graph import tpu_export as tpu_inference



class BatchConfig(tpu_inference.BatchConfig):
  """How a TPU inference export batches requests (TPUEstimator's)."""

  def __new__(cls, num_batch_threads, max_batch_size, batch_timeout_micros,
              allowed_batch_sizes, max_enqueued_batches=100):
    return super().__new__(cls, num_batch_threads, max_batch_size,
                           batch_timeout_micros, allowed_batch_sizes,
                           max_enqueued_batches)


class ExportSavedModelApiVersion(enum.Enum):
  V1 = 1  # TPUEstimator rewrites the model_fn for TPU inference.
  V2 = 2  # The model_fn does, with the functions below.


def inference_on_tpu(computation, inputs_to_tpu, num_batch_threads,
                     max_batch_size, batch_timeout_micros,
                     allowed_batch_sizes=None, max_enqueued_batches=100):
  """computation(*inputs_to_tpu)'s outputs, computed on a TPU core; batched
  first unless max_batch_size is None or 0."""
  batch_config = None
  if max_batch_size:
    batch_config = BatchConfig(num_batch_threads, max_batch_size,
                               batch_timeout_micros, allowed_batch_sizes,
                               max_enqueued_batches)
  return tpu_inference.call_on_tpu(
      lambda inputs: compat_tpu_inference.rewrite(computation, inputs),
      list(inputs_to_tpu), batch_config, name='tpu_computation')


def model_fn_inference_on_tpu(model_fn, features, labels=None, config=None,
                              params=None, batch_config=None):
  """model_fn's PREDICT spec with its predictions and export outputs
  computed on a TPU core (model_fn gets the arguments it names)."""
  args = estimator_calls.fn_args(model_fn)
  kwargs = {}
  if 'labels' in args:
    kwargs['labels'] = labels
  if 'mode' in args:
    kwargs['mode'] = specs.ModeKeys.PREDICT
  if 'config' in args:
    kwargs['config'] = config
  if 'params' in args:
    kwargs['params'] = params
  return tpu_inference.model_fn_on_tpu(
      lambda inputs: model_fn(inputs, **kwargs), features, batch_config)
