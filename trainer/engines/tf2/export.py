"""SavedModel export of the tf2 runner, as Estimator.export_saved_model does.

A serving_input_receiver_fn (as Estimator takes it: it may make TF1
placeholders) and the model_fn in PREDICT are traced together with
tf.compat.v1.wrap_function, on variables restored from the checkpoint;
the receiver's placeholders become the signatures' inputs. The signatures
are the spec's export_outputs, named by their keys (PredictOutput: its
outputs; ClassificationOutput: classes and scores; RegressionOutput:
outputs), with `serving_default` the default one; without export_outputs,
`serving_default` returns the predictions. Receiver tensor alternatives
(`receiver_tensors_alternatives`) are not exported (a warning says so).
"""

import os
import time

from absl import logging
import tensorflow as tf

from trainer.api import estimator_names as estimator_compat
from trainer.compat import tf1_semantics
from trainer.engines.tf2 import model_fn_adapter
from trainer.engines.tf2 import name_checkpoints
from trainer.engines.tf2 import spec as spec_lib

SERVING_DEFAULT = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
_PREDICT = estimator_compat.ModeKeys.PREDICT


def _as_dict(value, key):
  return dict(value) if isinstance(value, dict) else {key: value}


def signature_outputs(export_output):
  """{name: tensor} of one export output (Predict, Classification or
  Regression output, by their fields)."""
  if hasattr(export_output, 'outputs'):
    return dict(export_output.outputs)
  if hasattr(export_output, 'classes') or hasattr(export_output, 'scores'):
    outputs = {}
    for name in ('classes', 'scores'):
      if getattr(export_output, name, None) is not None:
        outputs[name] = getattr(export_output, name)
    return outputs
  if hasattr(export_output, 'value'):
    return {'outputs': export_output.value}
  raise TypeError(f'export_outputs value {export_output!r} is not a '
                  'PredictOutput, ClassificationOutput or RegressionOutput.')


def signatures_of(spec):
  """{signature key: {output name: tensor}}, with serving_default."""
  if not spec.export_outputs:
    return {SERVING_DEFAULT: _as_dict(spec.predictions, 'output')}
  signatures = {key: signature_outputs(output)
                for key, output in spec.export_outputs.items()}
  if SERVING_DEFAULT not in signatures:
    if len(signatures) != 1:
      raise ValueError(
          f'export_outputs {sorted(signatures)} name several signatures '
          f'but none is {SERVING_DEFAULT!r}: Estimator needs one to be the '
          'default.')
    signatures[SERVING_DEFAULT] = next(iter(signatures.values()))
  return signatures


def _receiver(serving_input_receiver_fn):
  """(features, receiver_tensors) of what the receiver fn returns."""
  receiver = serving_input_receiver_fn()
  if isinstance(receiver, tuple) and len(receiver) == 2:
    features, tensors = receiver
  else:
    features, tensors = receiver.features, receiver.receiver_tensors
    if getattr(receiver, 'receiver_tensors_alternatives', None):
      logging.warning('receiver_tensors_alternatives are not exported by '
                      'the tf2 runner; only the main receiver is.')
  return features, _as_dict(tensors, 'input')


def export_saved_model(model_fn, params, serving_input_receiver_fn,
                       checkpoint, export_dir, config=None):
  """Writes EXPORT_DIR/TIMESTAMP with model_fn's variables from `checkpoint`.

  params: what the model_fn sees in PREDICT (batch_size None). Returns the
  SavedModel's path.
  """
  module = model_fn_adapter.ModelFnModule(model_fn, config=config)
  built = {}

  def build():
    features, receivers = _receiver(serving_input_receiver_fn)
    spec = spec_lib.normalize(module(features, None, _PREDICT, params),
                              _PREDICT)
    built['receivers'] = receivers
    built['signatures'] = signatures_of(spec)
    return tf.nest.flatten(built['signatures'])

  with module.creation_scope(), tf1_semantics.graph_semantics():
    wrapped = tf.compat.v1.wrap_function(build, [])
  name_checkpoints.NameBasedCheckpoints(
      module.variables_by_name(), os.path.dirname(checkpoint), 1).restore(
          checkpoint)
  graph = wrapped.graph
  inputs = {name: graph.get_tensor_by_name(t.name)
            for name, t in built['receivers'].items()}
  functions = {}
  for key, outputs in built['signatures'].items():
    pruned = wrapped.prune(
        feeds=list(inputs.values()),
        fetches={n: graph.get_tensor_by_name(t.name)
                 for n, t in outputs.items()})
    functions[key] = _signature(pruned, inputs)
  exported = tf.Module()
  exported.variables_of_model = list(module.variables_by_name().values())
  exported.wrapped = wrapped
  target = os.path.join(export_dir, str(int(time.time())))
  tf.io.gfile.makedirs(export_dir)
  tf.saved_model.save(exported, target, signatures=functions)
  logging.info('Exported signatures %s to %s.', sorted(functions), target)
  return target


def _signature(pruned, inputs):
  """A tf.function taking the receiver tensors by name, calling `pruned`."""
  names = list(inputs)
  specs = [tf.TensorSpec(t.shape, t.dtype, name=n)
           for n, t in inputs.items()]

  def serve(*args):
    return pruned(*args)

  function = tf.function(serve, input_signature=specs, autograph=False)
  function.argument_names = names
  return function
