"""Refuses model_fns whose unfetched variable updates TF2 would run.

A TF1 Session runs only what is fetched: a model_fn may build train_op in
EVAL mode, or batch-norm updates outside train_op's dependencies, and
Estimator never runs them there. Inside tf.function every stateful op runs,
so under the tf2 runner the same model_fn would update weights during
evaluate() or change training, silently. check() finds ops the model_fn
created that write variables and that none of the spec's fetches depends
on, and raises UnfetchedUpdateError naming them.
"""

import re

_WRITES = re.compile(r'^(Assign|ResourceApply|ResourceSparseApply|'
                     r'ResourceScatter|Scatter|Apply|SparseApply)')


class UnfetchedUpdateError(ValueError):
  """The model_fn builds variable updates its spec does not fetch."""


def _op(value):
  return getattr(value, 'op', value)


def _needed(fetches):
  """Every op the fetches depend on (inputs and control inputs)."""
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


def check(graph, ops_before, fetches, mode):
  """Raises UnfetchedUpdateError for variable writes no fetch depends on.

  graph: the graph the model_fn was traced in; ops_before: how many ops it
  had before the model_fn ran; fetches: tensors/ops the spec hands on.
  """
  created = graph.get_operations()[ops_before:]
  needed = _needed(fetches)
  unfetched = [op for op in created
               if _WRITES.match(op.type) and id(op) not in needed]
  if unfetched:
    names = ', '.join(f'{op.type} {op.name}' for op in unfetched[:5])
    raise UnfetchedUpdateError(
        f'model_fn in {mode} mode creates {len(unfetched)} variable update(s) '
        f'that nothing the spec returns depends on ({names}). A TF1 Session '
        'never runs them; the tf2 runner\'s tf.function would run them at '
        'every step, silently changing results. Build them only where they '
        'are used (e.g. optimizer.minimize() under `if mode == TRAIN`), or '
        'make train_op depend on them (tf.control_dependencies).')
