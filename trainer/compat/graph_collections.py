"""Graph collections of one model_fn call, per thread.

A TF1 model_fn reads and fills graph collections (TRAINABLE_VARIABLES,
UPDATE_OPS, LOSSES, SUMMARIES, its own 'moving_vars'...) as if it were the
only model in a new graph. MirroredStrategy traces each replica's call in
its own thread, interleaved at merge_call, in one graph: with the graph's
one set of collections, a replica would see the others' losses and update
ops. `call_collections(graph)` gives the calling thread its own collections
of `graph` for the block (threads outside such a block see the graph's
own), by replacing the graph's private collections dict with a per-thread
view of it once.
"""

import collections.abc
import contextlib
import threading


class _PerThreadCollections(collections.abc.MutableMapping):
  """The graph's collections dict, or the calling thread's own inside a
  call_collections() block."""

  def __init__(self, shared):
    self.shared = shared
    self._local = threading.local()

  def _current(self):
    stack = getattr(self._local, 'stack', None)
    return stack[-1] if stack else self.shared

  def push(self, contents):
    stack = getattr(self._local, 'stack', None)
    if stack is None:
      stack = self._local.stack = []
    stack.append(contents)

  def pop(self):
    return self._local.stack.pop()

  def __getitem__(self, key):
    return self._current()[key]

  def __setitem__(self, key, value):
    self._current()[key] = value

  def __delitem__(self, key):
    del self._current()[key]

  def __iter__(self):
    return iter(self._current())

  def __len__(self):
    return len(self._current())


def _view(graph):
  collections_dict = graph._collections  # pylint: disable=protected-access
  if not isinstance(collections_dict, _PerThreadCollections):
    collections_dict = _PerThreadCollections(collections_dict)
    graph._collections = collections_dict  # pylint: disable=protected-access
  return collections_dict


def user_keys(mapping):
  """Keys model code uses (GraphKeys and its own); TF's private ones (the
  variable store and scopes, shared by all calls) start with _."""
  return [key for key in mapping
          if isinstance(key, str) and not key.startswith('_')]


@contextlib.contextmanager
def call_collections(graph, contents=None):
  """The calling thread's own collections of `graph` for the block: TF's
  private ones shared, the others empty (as in a new graph) or `contents`
  ({key: list}). Yields a dict that receives the block's collections."""
  view = _view(graph)
  outer = view._current()  # pylint: disable=protected-access
  own = {key: value for key, value in outer.items()
         if key not in user_keys(outer)}
  for key, values in (contents or {}).items():
    own[key] = list(values)
  view.push(own)
  result = {}
  try:
    yield result
  finally:
    view.pop()
    result.update({key: list(own[key]) for key in user_keys(own)})
