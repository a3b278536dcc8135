"""TF1 graph semantics for legacy model code traced by the tf2 runner.

The tf2 runner traces an unmodified model_fn with tf.function, over
variables that live outside any graph. TF1 model code relies on idioms that
TF2 changed for such variables and tensors. Inside `graph_semantics()` they
behave as in a TF1 Graph again:

  * variables and tensors are hashable and `==` compares identity, so they
    can be kept in sets and used as dict keys (`tf.compat.v1` behaviour, what
    `tf.compat.v1.disable_tensor_equality()` switches to, here only for the
    duration);
  * `variable.op` of a variable created outside a graph is an op-like object
    whose `.name` is the variable's TF1 name (`v.op.name`, used by
    `ExponentialMovingAverage.variables_to_restore()`, slot naming and
    checkpoint maps); each replica copy of a distributed variable answers
    with the name of the variable it belongs to, as in a TF1 checkpoint;
  * `variable.initializer` of such a variable is a no-op (it was
    initialised when made), so `global_variables_initializer()` builds, and
    `only_initializers(op)` tells a Scaffold init_op of nothing else;
  * a `tf.compat.v1.train.Saver` built inside a traced function records its
    arguments and builds nothing, so no save or restore op runs inside the
    training step; `eager_saver(saver)` builds the real one afterwards;
  * SessionRunHooks accept such variables (or their names) as tensors to fetch
    (`LoggingTensorHook({'step': global_step})`);
  * a Keras metric that was updated reports an update op, as Keras' v1
    Metric class does in a TF1 graph (Estimator's EstimatorSpec requires
    it of Metric objects in eval_metric_ops; in a trace the update runs
    anyway, by automatic control dependencies);
  * a tf.summary (v2) file writer made inside the trace, which
    create_file_writer lifts out and initialises at once (TF then answers
    `init()` with None), answers `init()` with a no-op, as `init()` in a TF1
    graph gives an op (`tf.control_dependencies([writer.init()])`, SimCLR);
    and the graph that writes with it (`as_default()`) keeps it alive: TF
    destroys a writer's resource with its Python object, which the model_fn
    drops when it returns, and the traced writes would then fail.

`reads_at_step_start(variable)` makes every read of one variable while a
step is built give its value at the step's start: TF1's executor runs a
read that does not depend on the step's update before it (TPUEstimator
writes host_call summaries of global_step 0 on the first step), whereas
tf.function orders reads after updates made earlier in program order.

The switches are process-wide (class attributes) and reference-counted, so
the replica threads of MirroredStrategy can enter and leave concurrently;
the state found on first entry is restored on last exit. This module is the
only one that patches TensorFlow classes; tests/engines/tf2_tf1_semantics_test.py checks
every idiom on both lanes.
"""

import contextlib
import inspect
import sys
import threading
import weakref

import tensorflow as tf
# pylint: disable=g-direct-tensorflow-import
from tensorflow.python.distribute import distribute_utils
from tensorflow.python.ops import resource_variable_ops
from tensorflow.python.ops import summary_ops_v2
from tensorflow.python.training import basic_session_run_hooks
# pylint: enable=g-direct-tensorflow-import

_Saver = tf.compat.v1.train.Saver
_Variable = resource_variable_ops.BaseResourceVariable
_ORIGINAL_OP = _Variable.op
_ORIGINAL_SAVER_INIT = _Saver.__init__
_ORIGINAL_READ = _Variable._read_variable_op  # pylint: disable=protected-access
_ORIGINAL_INITIALIZER = _Variable.initializer
_Writer = summary_ops_v2._ResourceSummaryWriter  # pylint: disable=protected-access
_ORIGINAL_WRITER = {name: _Writer.__dict__[name]
                    for name in ('init', 'as_default', 'set_as_default')}
_graph_writers = weakref.WeakKeyDictionary()  # graph -> writers it uses.

_lock = threading.Lock()
_depth = 0
_saved_equality = None


class VariableOp:
  """What `variable.op` gives in a TF1 graph, for a variable outside one."""

  type = 'VarHandleOp'
  graph = None  # The variable lives in the eager context, not in a graph.
  inputs = ()
  traceback = None

  def __init__(self, variable):
    self._variable = variable
    container = distribute_utils.value_container(variable)
    self.name = container.name.split(':')[0]
    self.device = variable.device

  @property
  def outputs(self):
    return [self._variable.handle]

  def values(self):
    return tuple(self.outputs)

  def __repr__(self):
    return f'<VariableOp {self.name!r}>'


def _variable_op(variable):
  # pylint: disable=protected-access
  if variable._in_graph_mode:
    return variable._handle.op
  # An eager or lifted variable: its handle is eager, or a placeholder
  # captured by the function being traced (named like `w_29`).
  return VariableOp(variable)


def _variable_initializer(variable):
  # pylint: disable=protected-access
  if variable._in_graph_mode or tf.executing_eagerly():
    return _ORIGINAL_INITIALIZER.fget(variable)
  # Initialised when it was made: nothing left to run, as a no-op.
  return tf.no_op(name=variable._shared_name + '/Assign')


def only_initializers(op):
  """True if running `op` would only initialise variables made outside the
  graph (a Scaffold's usual init_op, `tf.group(global_variables_initializer(),
  local_variables_initializer())`): it is made of no-ops alone."""
  seen, pending = set(), [op]
  while pending:
    current = pending.pop()
    if id(current) in seen:
      continue
    seen.add(id(current))
    if current.type != 'NoOp':
      return False
    pending.extend(current.control_inputs)
    pending.extend(tensor.op for tensor in current.inputs)
  return True


def _saver_init(self, var_list=None, *args, **kwargs):
  if tf.executing_eagerly():
    _ORIGINAL_SAVER_INIT(self, var_list, *args, **kwargs)
    return
  self.traced_arguments = (var_list, args, kwargs)
  self._var_list = var_list  # pylint: disable=protected-access
  self.saver_def = None
  self._is_built = False  # pylint: disable=protected-access
  # A Scaffold init_fn (or slim's assign_from_checkpoint_fn) calls
  # saver.restore(session, path) after the trace, with no Session.
  self.restore = lambda sess, save_path: _traced_restore(self, save_path)


_restorers = []  # Stack of restore(eager Saver, path) functions.


@contextlib.contextmanager
def traced_savers_restore_with(restore):
  """Within the block, `saver.restore(session, path)` on a Saver made inside
  a trace calls restore(eager_saver(saver), path): the runner's way to
  restore eagerly (distributed variables included)."""
  _restorers.append(restore)
  try:
    yield
  finally:
    _restorers.pop()


def _traced_restore(saver, save_path):
  if not _restorers:
    raise RuntimeError(
        'A tf.compat.v1.train.Saver made inside the model_fn restores only '
        'where the runner runs a Scaffold init_fn; elsewhere there is no '
        'Session: restore with tf.compat.v1.train.init_from_checkpoint.')
  with tf.init_scope():
    _restorers[-1](eager_saver(saver), save_path)


def saver_max_to_keep(saver):
  """A tf.compat.v1 Saver's max_to_keep, also of one made in a trace."""
  if not hasattr(saver, 'traced_arguments'):
    return saver._max_to_keep  # pylint: disable=protected-access
  var_list, args, kwargs = saver.traced_arguments
  bound = inspect.signature(_ORIGINAL_SAVER_INIT).bind(
      saver, var_list, *args, **kwargs)
  bound.apply_defaults()
  return bound.arguments['max_to_keep']


def saver_var_list(saver):
  """The var_list a tf.compat.v1 Saver saves (its private `_var_list`)."""
  return saver._var_list  # pylint: disable=protected-access


def saver_reshapes(saver):
  """Whether `saver` was built with reshape=True (its private `_reshape`)."""
  return bool(saver._reshape)  # pylint: disable=protected-access


def saver_like(saver, var_list):
  """A tf.compat.v1 Saver of `var_list` with the reshape and sharded
  settings `saver` was built with."""
  return tf.compat.v1.train.Saver(var_list, reshape=saver._reshape,  # pylint: disable=protected-access
                                  sharded=saver._sharded)  # pylint: disable=protected-access


def eager_saver(saver):
  """`saver`, or the Saver it stands for if it was made inside a trace."""
  if saver is None or not hasattr(saver, 'traced_arguments'):
    return saver
  var_list, args, kwargs = saver.traced_arguments
  with graph_semantics():
    return _Saver(var_list, *args, **kwargs)


_ORIGINAL_AS_GRAPH_ELEMENT = basic_session_run_hooks._as_graph_element  # pylint: disable=protected-access


def _variable_named(name):
  """The variable of the current graph's GLOBAL_VARIABLES named `name`."""
  base = name.split(':')[0]
  for variable in tf.compat.v1.get_collection(
      tf.compat.v1.GraphKeys.GLOBAL_VARIABLES):
    if variable.name.split(':')[0] == base:
      return variable
  return None


def _as_graph_element(obj):
  """basic_session_run_hooks' lookup, also accepting variables made outside
  the graph being traced, as objects or by name
  (`LoggingTensorHook({'step': global_step})`, `{'step': 'global_step'}`)."""
  if isinstance(obj, tf.Variable):
    return obj
  try:
    return _ORIGINAL_AS_GRAPH_ELEMENT(obj)
  except (KeyError, ValueError):
    variable = _variable_named(obj) if isinstance(obj, str) else None
    if variable is None:
      raise
    return variable


def graph_element(name):
  """The tensor, op or variable (made outside the graph) named `name` in
  the current graph, as a TF1 Session looks fetches up."""
  return _as_graph_element(name)


_step_start = {}  # id(variable) -> (graph, its value at the step's start)


def _read_variable_op(variable, no_copy=False):
  entry = _step_start.get(id(variable))
  # Not in an init_scope of the step (eager: a hook asking the session's
  # global step while the step is traced), where the read is a value.
  if (entry is not None and not tf.executing_eagerly() and
      entry[0] is tf.compat.v1.get_default_graph()):
    return entry[1]
  return _ORIGINAL_READ(variable, no_copy=no_copy)


def variable_components(variable):
  """The variable, and each replica's copy of a distributed one (its
  private `_values`)."""
  return [variable] + list(getattr(variable, '_values', ()))


@contextlib.contextmanager
def reads_at_step_start(variable, value):
  """While one step is built, reads of `variable` (and of its replica
  copies) in the current graph give `value`, its read at the step's start."""
  graph = tf.compat.v1.get_default_graph()
  keys = [id(v) for v in variable_components(variable)]
  with _lock:
    for key in keys:
      _step_start[key] = (graph, value)
  with graph_semantics():
    try:
      yield
    finally:
      with _lock:
        for key in keys:
          if _step_start.get(key, (None, None))[1] is value:
            del _step_start[key]


def _writer_init(writer):
  """writer.init(): a no-op in a trace for a writer initialised when it was
  made (eagerly: create_file_writer lifts itself out of traces)."""
  op = _ORIGINAL_WRITER['init'](writer)
  if op is None and not tf.executing_eagerly():
    return tf.no_op(name='summary_writer_initialized')
  return op


def _keep_writer(writer):
  """The graph being built keeps `writer` as long as the graph lives."""
  if not tf.executing_eagerly():
    graph = tf.compat.v1.get_default_graph()
    with _lock:
      writers = _graph_writers.setdefault(graph, [])
      if not any(w is writer for w in writers):
        writers.append(writer)


def _writer_as_default(writer, step=None):
  _keep_writer(writer)
  return _ORIGINAL_WRITER['as_default'](writer, step)


def _writer_set_as_default(writer, step=None):
  _keep_writer(writer)
  return _ORIGINAL_WRITER['set_as_default'](writer, step)


_keras_metric_updates = {}  # Metric class -> its original `updates`.


def _metric_updates(metric):
  if not metric.variables:
    return []
  return [tf.no_op(name=metric.name + '_update')]


def _keras_metric_classes():
  """The Metric classes of the Keras packages model code has imported."""
  classes = []
  for package in ('tf_keras', 'keras'):
    module = sys.modules.get(f'{package}.metrics') or sys.modules.get(
        f'{package}.src.metrics')
    metric = getattr(module, 'Metric', None)
    if isinstance(metric, type) and metric not in classes:
      classes.append(metric)
  return classes


def _install():
  global _saved_equality
  _saved_equality = tf.Tensor._USE_EQUALITY  # pylint: disable=protected-access
  tf.compat.v1.disable_tensor_equality()
  _Variable.op = property(_variable_op)
  _Variable.initializer = property(_variable_initializer)
  _Variable._read_variable_op = _read_variable_op  # pylint: disable=protected-access
  _Saver.__init__ = _saver_init
  basic_session_run_hooks._as_graph_element = _as_graph_element  # pylint: disable=protected-access
  _Writer.init = _writer_init
  _Writer.as_default = _writer_as_default
  _Writer.set_as_default = _writer_set_as_default
  for metric in _keras_metric_classes():
    _keras_metric_updates[metric] = metric.__dict__.get('updates')
    metric.updates = property(_metric_updates)


def _uninstall():
  _Variable.op = _ORIGINAL_OP
  _Variable.initializer = _ORIGINAL_INITIALIZER
  _Variable._read_variable_op = _ORIGINAL_READ  # pylint: disable=protected-access
  _Saver.__init__ = _ORIGINAL_SAVER_INIT
  basic_session_run_hooks._as_graph_element = _ORIGINAL_AS_GRAPH_ELEMENT  # pylint: disable=protected-access
  for name, original in _ORIGINAL_WRITER.items():
    setattr(_Writer, name, original)
  for metric, original in _keras_metric_updates.items():
    if original is None:
      del metric.updates
    else:
      metric.updates = original
  _keras_metric_updates.clear()
  if _saved_equality:
    tf.compat.v1.enable_tensor_equality()


@contextlib.contextmanager
def graph_semantics():
  """Within the block, TF1 idioms on variables and savers work as above."""
  global _depth
  with _lock:
    if _depth == 0:
      _install()
    _depth += 1
  try:
    yield
  finally:
    with _lock:
      _depth -= 1
      if _depth == 0:
        _uninstall()
