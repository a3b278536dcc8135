"""What a tf.compat.v1 Saver restores, by checkpoint key, found without
building or running anything; and a check before every Saver.restore, for
the real Estimator, whose restores happen inside TensorFlow's own code.

`restored_variables(saver)`: {checkpoint key: (shape, dtype)} of what
`saver.restore` reads (saver None: the Saver a Scaffold of the default graph
gets, over its GLOBAL_VARIABLES and SAVEABLE_OBJECTS), keyed as the Saver
keys them: a variable by its TF1 name, a partitioned variable (its parts
carrying save-slice info) by its full name with its full shape, a dict
var_list by its keys; SaveableObjects (tables) by their specs' names with
an unknown shape. Shapes are tuples (None for an unknown dimension) or None
(unknown rank); dtypes are base dtypes.

`object_graph_names(reader)`: for an object-based checkpoint (one
tf.train.Checkpoint wrote), {variable name at save: checkpoint key}, the
mapping Saver.restore falls back on for such a checkpoint; None for a
name-based one.

`checking_restores(check)`: inside the block every
tf.compat.v1.train.Saver.restore(sess, path) calls check(saver, path)
first (re-entrant, thread-safe; the patch is removed when the last block
ends); `install_restore_check(check)` for the rest of the process.
"""

import contextlib
import functools
import threading

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2  # pylint: disable=g-direct-tensorflow-import
# pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import variables as variables_lib
from tensorflow.python.training.saving import saveable_object
# pylint: enable=g-direct-tensorflow-import

OBJECT_GRAPH_KEY = '_CHECKPOINTABLE_OBJECT_GRAPH'
_v1 = tf.compat.v1


def _shape(shape):
  shape = tf.TensorShape(shape)
  return None if shape.rank is None else tuple(shape.as_list())


def _slice_info(variable):
  return getattr(variable, '_save_slice_info', None)


def _name(variable):
  """The key a Saver gives a variable without slice info (as TF's
  saveable_object_util.op_list_to_dict names it)."""
  if not getattr(variable, '_in_graph_mode', True):
    return variable._shared_name  # pylint: disable=protected-access
  return variable.op.name


def _entry(variable):
  """(key, shape, dtype) of one variable or part (slices: the whole)."""
  info = _slice_info(variable)
  if info is not None:
    return info.full_name, tuple(info.full_shape), variable.dtype.base_dtype
  return _name(variable), _shape(variable.shape), variable.dtype.base_dtype


def _add(found, key, shape, dtype):
  found.setdefault(key, (shape, dtype))


def _add_listed(found, value):
  if isinstance(value, variables_lib.PartitionedVariable):
    for part in value:
      _add(found, *_entry(part))
  elif isinstance(value, saveable_object.SaveableObject):
    for spec in value.specs:
      if isinstance(spec.name, str):
        _add(found, spec.name, None, tf.as_dtype(spec.dtype).base_dtype)
  elif isinstance(value, tf.Variable):
    _add(found, *_entry(value))
  elif isinstance(value, (list, tuple)):
    for item in value:
      _add_listed(found, item)
  # Anything else (a Trackable the Saver asks for its saveables) builds
  # ops to be enumerated: left out, as Saver.restore still checks it.


def _add_named(found, key, value):
  """A dict var_list's entry: `key` names the variable (or all parts)."""
  if isinstance(value, variables_lib.PartitionedVariable):
    value = list(value)
  if isinstance(value, (list, tuple)):
    if not value:
      return
    info = _slice_info(value[0])
    if info is not None:
      _add(found, key, tuple(info.full_shape), value[0].dtype.base_dtype)
    return
  if isinstance(value, tf.Variable):
    info = _slice_info(value)
    shape = (tuple(info.full_shape) if info is not None else
             _shape(value.shape))
    _add(found, key, shape, value.dtype.base_dtype)
  elif isinstance(value, tf.Tensor):
    _add(found, key, _shape(value.shape), value.dtype.base_dtype)


def default_var_list():
  """What a Saver without var_list saves in the default graph."""
  return (_v1.global_variables() +
          _v1.get_collection(_v1.GraphKeys.SAVEABLE_OBJECTS))


def var_list_variables(var_list):
  """{checkpoint key: (shape, dtype)} of a Saver's var_list (a list or a
  {name: variable} dict)."""
  found = {}
  if isinstance(var_list, dict):
    for key, value in var_list.items():
      _add_named(found, key, value)
  else:
    _add_listed(found, list(var_list))
  return found


def graph_saver(saver=None):
  """The Saver a Scaffold with `saver` restores through in the default
  graph: it, else the graph's SAVERS collection's; None: a default one."""
  if saver is not None:
    return saver
  savers = _v1.get_collection(_v1.GraphKeys.SAVERS)
  return savers[0] if len(savers) == 1 else None


def restored_variables(saver=None):
  """See the module docstring. A tf.train.Checkpoint given as a Scaffold's
  saver restores objects, not names: {}."""
  if saver is not None and not isinstance(saver, _v1.train.Saver):
    return {}
  var_list = None if saver is None else saver._var_list  # pylint: disable=protected-access
  if var_list is None:
    var_list = default_var_list()
  return var_list_variables(var_list)


def reshapes(saver):
  """Whether `saver` restores a tensor into a variable of another shape
  with as many elements (Saver(reshape=True))."""
  return bool(getattr(saver, '_reshape', False))


def object_graph_names(reader):
  """See the module docstring."""
  if not reader.has_tensor(OBJECT_GRAPH_KEY):
    return None
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(OBJECT_GRAPH_KEY))
  return {attribute.full_name: attribute.checkpoint_key
          for node in graph.nodes for attribute in node.attributes
          if attribute.full_name}


_lock = threading.Lock()
_checks = []  # One per checking_restores block in progress or install.
_original = {}


def _checked_restore(original):

  @functools.wraps(original)
  def restore(self, sess, save_path):
    with _lock:
      checks = list(dict.fromkeys(_checks))
    if save_path:
      for check in checks:
        check(self, save_path)
    return original(self, sess, save_path)

  return restore


def _add_check(check):
  saver_class = _v1.train.Saver
  with _lock:
    if not _checks:
      _original['restore'] = saver_class.restore
      saver_class.restore = _checked_restore(saver_class.restore)
    _checks.append(check)


def _remove_check(check):
  with _lock:
    _checks.remove(check)
    if not _checks:
      _v1.train.Saver.restore = _original.pop('restore')


@contextlib.contextmanager
def checking_restores(check):
  """See the module docstring."""
  _add_check(check)
  try:
    yield
  finally:
    _remove_check(check)


def install_restore_check(check):
  """checking_restores(check) for the rest of the process. Idempotent."""
  with _lock:
    if check in _installed:
      return
    _installed.append(check)
  _add_check(check)


_installed = []
