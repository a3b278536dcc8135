"""The model_fn computed on a TPU core, as TPUEstimator exports it for serving.

`model_fn_on_tpu(call_model_fn, features)` builds, in the default graph,
call_model_fn(features) rewritten for one TPU core inside a
TPUPartitionedCall (optionally behind a batching function), and returns
the spec it returned with its predictions and export outputs replaced by
the call's CPU-side outputs. Export outputs must be ClassificationOutput,
RegressionOutput or PredictOutput (ValueError otherwise), as in
TPUEstimator. The graph is built on any machine and runs on a TPU host.
"""

import collections

import tensorflow as tf

from trainer.compat import facade_private
from trainer.compat import tpu_rewrite as tpu_inference

# The key a single-tensor `predictions` is flattened under (TPUEstimator's).
TENSOR_PREDICTIONS_KEY = '_key_when_predictions_is_a_tensor'

BatchConfig = collections.namedtuple('BatchConfig', [
    'num_batch_threads', 'max_batch_size', 'batch_timeout_micros',
    'allowed_batch_sizes', 'max_enqueued_batches'])


def export_output_tensors(export_output):
  """The tensors of an export output, in its constructor's order."""
  if isinstance(export_output, facade_private.ClassificationOutput):
    return [export_output.scores, export_output.classes]
  if isinstance(export_output, facade_private.RegressionOutput):
    return [export_output.value]
  if isinstance(export_output, facade_private.PredictOutput):
    return list(export_output.outputs.values())
  raise ValueError('`export_output` must be have type `ClassificationOutput`, '
                   f'`RegressionOutput`, or `PredictOutput`; got '
                   f'{export_output}.')


def with_tensors(export_output, tensors):
  """A copy of export_output made of `tensors` (export_output_tensors'
  order)."""
  if isinstance(export_output, facade_private.ClassificationOutput):
    return facade_private.ClassificationOutput(*tensors)
  if isinstance(export_output, facade_private.RegressionOutput):
    return facade_private.RegressionOutput(*tensors)
  if isinstance(export_output, facade_private.PredictOutput):
    return facade_private.PredictOutput(
        dict(zip(export_output.outputs.keys(), tensors)))
  raise ValueError(f'Unsupported export output {export_output}.')


def call_on_tpu(computation, inputs, batch_config=None, name='tpu_subgraph'):
  """computation(inputs)'s outputs, run on a TPU core picked per call (a
  function named `name`); with a BatchConfig, requests are batched first
  (inputs flattened with tf.nest)."""
  if not batch_config:
    return tpu_inference.partitioned_call(computation, inputs, name)

  @tf.nondifferentiable_batch_function(
      num_batch_threads=batch_config.num_batch_threads,
      max_batch_size=batch_config.max_batch_size,
      batch_timeout_micros=batch_config.batch_timeout_micros,
      allowed_batch_sizes=batch_config.allowed_batch_sizes,
      max_enqueued_batches=batch_config.max_enqueued_batches,
      autograph=False)
  def batched(*flat_inputs):
    return tpu_inference.partitioned_call(
        computation, tf.nest.pack_sequence_as(inputs, flat_inputs), name)

  return batched(*tf.nest.flatten(inputs))


def model_fn_on_tpu(call_model_fn, features, batch_config=None):
  """See the module docstring."""
  built = {}

  def on_tpu(inputs):
    def computation():
      spec = call_model_fn(inputs)
      outputs = collections.OrderedDict(
          (key, export_output_tensors(value))
          for key, value in spec.export_outputs.items())
      if isinstance(spec.predictions, dict):
        predictions = collections.OrderedDict(spec.predictions.items())
      else:
        predictions = {TENSOR_PREDICTIONS_KEY: spec.predictions}
      built.update(spec=spec, outputs=outputs, predictions=predictions)
      return tf.nest.flatten(predictions) + [
          t for t in tf.nest.flatten(outputs) if t is not None]

    # A function cannot return None: entries of export outputs that are
    # None (a ClassificationOutput without classes) are put back outside.
    return tpu_inference.rewrite(computation)

  tensors = list(call_on_tpu(on_tpu, features, batch_config))
  spec, outputs, predictions = (built['spec'], built['outputs'],
                                built['predictions'])
  count = len(tf.nest.flatten(predictions))
  new_predictions = tf.nest.pack_sequence_as(predictions, tensors[:count])
  remaining = iter(tensors[count:])
  new_outputs = tf.nest.pack_sequence_as(
      outputs, [None if t is None else next(remaining)
                for t in tf.nest.flatten(outputs)])
  if list(new_predictions) == [TENSOR_PREDICTIONS_KEY]:
    new_predictions = new_predictions[TENSOR_PREDICTIONS_KEY]
  return spec._replace(
      predictions=new_predictions,
      export_outputs=collections.OrderedDict(
          (key, with_tensors(spec.export_outputs[key], value))
          for key, value in new_outputs.items()))
