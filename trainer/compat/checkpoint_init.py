"""tf.compat.v1.train.init_from_checkpoint under the tf2 runner, as in TF1.

In a TF1 graph, init_from_checkpoint(ckpt_dir_or_file, assignment_map) only
replaces the initializers of the variables it maps (by name, by scope, by
variable object, partitioned variables by their parts): the Session runs
them when model_dir has no checkpoint to restore, in any mode, and never
otherwise. Under the tf2 runner the model_fn is traced (and a scaffold_fn
runs eagerly) over variables that already exist, where TF would build an
assignment that runs at every step (or at once). Inside `recording()` TF's
own init_from_checkpoint resolves and checks the map as usual, but each
(variable, checkpoint file, tensor, slice) it would assign is recorded in a
`Recorder` instead; the runner's load takes them and `apply`s them only when
it initialises variables, never when it restores a checkpoint.

Names resolve as in the TF1 graph of the call: against the variables that
get_variable gave the model_fn calls in progress (a scaffold_fn: the last
call's), not the module's whole store, which also holds other modes'
variables (a TRAIN trace's optimizer slots seen by an EVAL trace's map).
"""

import contextlib
import threading

import tensorflow as tf
# pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import variable_scope as vs
from tensorflow.python.training import checkpoint_utils
# pylint: enable=g-direct-tensorflow-import

_ORIGINAL_INIT = checkpoint_utils._init_from_checkpoint  # pylint: disable=protected-access
_ORIGINAL_SET = checkpoint_utils._set_checkpoint_initializer  # pylint: disable=protected-access

_lock = threading.Lock()
_depth = 0
_active = []  # Recorders of the recording() blocks in progress.


class Recorder:
  """The checkpoint initializers a module's model_fn calls asked for."""

  def __init__(self):
    self._lock = threading.Lock()
    self._assignments = {}  # id(variable) -> (variable, file, tensor, slice)
    self._calls = {}  # thread id -> names get_variable gave the call so far
    self._last_call = None  # Names of the last finished call.

  def add(self, variable, ckpt_file, tensor_name, slice_spec):
    """Records one initializer (a later one of a variable replaces it)."""
    with self._lock:
      self._assignments[id(variable)] = (variable, ckpt_file, tensor_name,
                                         slice_spec)

  def take(self):
    """The initializers recorded since the last take(), in record order."""
    with self._lock:
      taken, self._assignments = list(self._assignments.values()), {}
    return taken

  @contextlib.contextmanager
  def call(self):
    """One model_fn call: yields the set to add its get_variable names to."""
    names = set()
    key = threading.get_ident()
    with self._lock:
      self._calls[key] = names
    try:
      yield names
    finally:
      with self._lock:
        del self._calls[key]
        self._last_call = names

  def visible_names(self):
    """Names init_from_checkpoint may map: those of the calls in progress
    (every replica's), else of the last call; None before any call."""
    with self._lock:
      if self._calls:
        return set().union(*self._calls.values())
      return None if self._last_call is None else set(self._last_call)


def _recorder():
  return _active[-1] if _active else None


def _init_from_checkpoint(ckpt_dir_or_file, assignment_map):
  """TF's, on the store's variables the current call can see."""
  recorder = _recorder()
  names = recorder.visible_names() if recorder is not None else None
  if names is None:
    return _ORIGINAL_INIT(ckpt_dir_or_file, assignment_map)
  store = vs._get_default_variable_store()  # pylint: disable=protected-access
  every = store._vars  # pylint: disable=protected-access
  # Other replica threads wait in merge_call while this runs.
  store._vars = {k: v for k, v in every.items() if k in names}  # pylint: disable=protected-access
  try:
    return _ORIGINAL_INIT(ckpt_dir_or_file, assignment_map)
  finally:
    store._vars = every  # pylint: disable=protected-access


def _set_checkpoint_initializer(variable, ckpt_file, tensor_name, slice_spec,
                                name='checkpoint_initializer'):
  recorder = _recorder()
  if recorder is None:
    return _ORIGINAL_SET(variable, ckpt_file, tensor_name, slice_spec, name)
  recorder.add(variable, ckpt_file, tensor_name, slice_spec)
  return None


@contextlib.contextmanager
def recording(recorder):
  """Within the block, init_from_checkpoint records into `recorder`.

  Process-wide and reference-counted (replica threads enter concurrently).
  """
  global _depth
  with _lock:
    if _depth == 0:
      checkpoint_utils._init_from_checkpoint = _init_from_checkpoint  # pylint: disable=protected-access
      checkpoint_utils._set_checkpoint_initializer = _set_checkpoint_initializer  # pylint: disable=protected-access
    _depth += 1
    _active.append(recorder)
  try:
    yield
  finally:
    with _lock:
      _active.remove(recorder)
      _depth -= 1
      if _depth == 0:
        checkpoint_utils._init_from_checkpoint = _ORIGINAL_INIT  # pylint: disable=protected-access
        checkpoint_utils._set_checkpoint_initializer = _ORIGINAL_SET  # pylint: disable=protected-access


def apply(assignments):
  """Assigns each recorded variable (every replica's copy) its checkpoint
  value, as its TF1 initializer would. Call in the strategy's scope."""
  for variable, ckpt_file, tensor_name, slice_spec in assignments:
    with tf.device('/cpu:0'):
      value = tf.raw_ops.RestoreV2(
          prefix=ckpt_file, tensor_names=[tensor_name],
          shape_and_slices=[slice_spec], dtypes=[variable.dtype.base_dtype])
    variable.assign(value[0])
  if assignments:
    files = sorted({a[1] for a in assignments})
    tf.compat.v1.logging.info(
        'Initialised %d variable(s) from %s (init_from_checkpoint).',
        len(assignments), ', '.join(files))
