"""The TF1 graph pieces of a TPU inference graph (no public API for them).

TPUEstimator's export (tags serve, tpu) calls the model_fn inside
`tf.compat.v1.tpu.rewrite`, inside a function run by `TPUPartitionedCall`
(which picks a TPU core per call), all under a `_TPUInferenceContext`. The
graph is built anywhere; it runs on a TPU host only.
"""

import contextlib

import tensorflow as tf


@contextlib.contextmanager
def inference_context():
  """Within: the control-flow context TPUEstimator builds export graphs in."""
  from tensorflow.python.tpu import tpu  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  context = tpu._TPUInferenceContext('tpu_inference', check_ops=False)  # pylint: disable=protected-access
  context.Enter()
  try:
    yield
  finally:
    context.Exit()


def is_inference_context(context):
  """Whether a graph's control-flow context is the TPU inference one."""
  from tensorflow.python.tpu import tpu  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return isinstance(context, tpu._TPUInferenceContext)  # pylint: disable=protected-access


@contextlib.contextmanager
def outside_inference_context():
  """Within: the default graph's control-flow context without the TPU
  inference one (TPUEstimator converts a spec off TPU there)."""
  graph = tf.compat.v1.get_default_graph()
  context = graph._get_control_flow_context()  # pylint: disable=protected-access
  if context is not None and is_inference_context(context):
    graph._set_control_flow_context(context.outer_context)  # pylint: disable=protected-access
  try:
    yield
  finally:
    graph._set_control_flow_context(context)  # pylint: disable=protected-access


def rewrite(computation, inputs=None):
  """computation(*inputs) rewritten for one TPU core: its output tensors,
  on the CPU side; ops it built that no output needs are pruned from XLA."""
  from tensorflow.python.tpu import tpu  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  # The module's own rewrite: --cpu_fallback refuses the public one (a
  # program's call), and this graph is built anywhere.
  outputs = tpu.rewrite(computation, inputs)
  tpu.prune_unconnected_ops_from_xla(tf.compat.v1.get_default_graph())
  return outputs


def partitioned_call(computation, inputs, name='tpu_subgraph'):
  """The outputs of computation(inputs) built as a function (`name` and a
  hash) and run by TPUPartitionedCall on the TPU core an ordinal selector
  picks."""
  from tensorflow.python.framework import function  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  from tensorflow.python.tpu import functional as tpu_functional  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  from tensorflow.python.tpu.ops import tpu_ops  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import

  # Variables are read on the TPU, not captured by value: they do not
  # change during inference.
  def body():
    return computation(inputs)

  body.__name__ = name
  tpu_subgraph = function.Defun(capture_resource_var_by_value=False)(body)

  return tpu_functional.TPUPartitionedCall(
      args=tpu_subgraph.captured_inputs,
      device_ordinal=tpu_ops.tpu_ordinal_selector(),
      Tout=[o.type for o in tpu_subgraph.definition.signature.output_arg],
      f=tpu_subgraph)
