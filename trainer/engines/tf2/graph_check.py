"""Refuses model_fns whose unfetched variable updates TF2 would run.

A TF1 Session runs only what is fetched: a model_fn may build train_op in
EVAL mode, or batch-norm updates outside train_op's dependencies, and
Estimator never runs them there. Inside tf.function every stateful op runs,
so under the tf2 runner the same model_fn would update weights during
evaluate() or change training, silently. The runner records, for each
model_fn call of a step's first trace, the ops the call created and what
the step fetches (`Recorder.add`), then `Recorder.check` raises
UnfetchedUpdateError naming the variable writes nothing fetched depends on.
Writes to variables the step is meant to update without fetching them
are exempt: a Keras Metric's accumulators in eval_metric_ops, and in
training the non-trainable variables (batch-norm moving averages, which
tf.compat.v1.layers update by themselves inside tf.function instead of
through UPDATE_OPS; a TF1 model that forgot UPDATE_OPS is not caught).
"""

import re
import threading

import tensorflow as tf

from trainer.api import errors
from trainer.compat import tf1_semantics

_WRITES = re.compile(r'^(Assign|ResourceApply|ResourceSparseApply|'
                     r'ResourceScatter|Scatter|Apply|SparseApply)')


class UnfetchedUpdateError(errors.TrainerError, ValueError):
  """The model_fn builds variable updates its spec does not fetch."""


def _op(value):
  return getattr(value, 'op', value)


def _needed(fetches):
  """ids of every op the fetches depend on (inputs and control inputs)."""
  seen = set()
  todo = [_op(f) for f in fetches if f is not None]
  while todo:
    op = todo.pop()
    if op is None or id(op) in seen or not hasattr(op, 'inputs'):
      continue
    seen.add(id(op))
    todo.extend(t.op for t in op.inputs)
    todo.extend(op.control_inputs)
  return seen


def _handles(variables):
  """ids of the handles of `variables` (each replica's copy included)."""
  handles = set()
  for variable in variables:
    for component in tf1_semantics.variable_components(variable):
      handle = getattr(component, 'handle', None)
      if handle is not None:
        handles.add(id(handle))
  return handles


def _targets_exempt(op, graph, exempt):
  """Whether `op` writes one of the exempt variables (by captured handle)."""
  if not exempt or not op.inputs:
    return False
  captured = {id(internal): external for external, internal in
              getattr(graph, 'captures', ())}
  external = captured.get(id(op.inputs[0]))
  return external is not None and id(external) in exempt


class Recorder:
  """What the model_fn calls of one trace created and what the step fetches.

  Replica threads add concurrently; check() after the trace.
  """

  def __init__(self):
    self._lock = threading.Lock()
    self._graphs = {}  # id(graph) -> [graph, first op index, fetches, exempt]

  @staticmethod
  def start():
    """The op count to pass to add(): call before the model_fn."""
    graph = tf.compat.v1.get_default_graph()
    return graph, len(graph.get_operations())

  def add(self, started, fetches, exempt_variables=()):
    """Records one model_fn call: `started` from start(), the tensors and
    ops the step fetches from it, variables it may write unfetched."""
    graph, first = started
    with self._lock:
      entry = self._graphs.setdefault(id(graph), [graph, first, [], set()])
      entry[1] = min(entry[1], first)
      entry[2].extend(f for f in fetches if f is not None)
      entry[3].update(_handles(exempt_variables))

  def check(self, mode):
    """Raises UnfetchedUpdateError for writes no fetch depends on; then
    forgets what was recorded."""
    with self._lock:
      entries, self._graphs = list(self._graphs.values()), {}
    for graph, first, fetches, exempt in entries:
      needed = _needed(fetches)
      unfetched = [op for op in graph.get_operations()[first:]
                   if _WRITES.match(op.type) and id(op) not in needed and
                   not _targets_exempt(op, graph, exempt)]
      if unfetched:
        names = ', '.join(f'{op.type} {op.name}' for op in unfetched[:5])
        raise UnfetchedUpdateError(
            f'model_fn in {mode} mode creates {len(unfetched)} variable '
            f'update(s) that nothing the spec returns depends on ({names}). '
            'A TF1 Session never runs them; the tf2 runner\'s tf.function '
            'would run them at every step, silently changing results. Build '
            'them only where they are used (e.g. optimizer.minimize() under '
            '`if mode == TRAIN`), or make train_op depend on them '
            '(tf.control_dependencies).')
