"""Calls an unmodified TF1 model_fn repeatedly in TF2 (eager / tf.function).

`ModelFnModule` owns every variable the model_fn makes, under the name a
TF1 graph gives it, so checkpoints move between runners:
  * get_variable goes through the tf-keras variable store
    (track_tf1_style_variables), so each call reuses the same variables;
  * variables made without get_variable (Keras layers, Adam's beta1_power,
    v1 metric accumulators) are created on the first call and returned on
    later calls; their name is uniquified on the full scoped name in
    creation order, as a TF1 graph does (a Keras `dense` layer and a later
    `tf.compat.v1.layers.dense` get `dense/kernel` and `dense/kernel_1` as
    in TF1, not the other way round);
  * graph collections start empty on every call (as in a new graph) and
    receive every variable made or reused (GLOBAL_VARIABLES, plus
    TRAINABLE_VARIABLES when trainable, plus the collections asked for), so
    `optimizer.minimize(loss)`, `tf.compat.v1.trainable_variables()` and
    UPDATE_OPS behave as in a TF1 graph;
  * the model_fn runs with TF1 graph semantics for variables and savers
    (trainer/compat/tf1_semantics.py) and with random-op seeds derived the
    same way under both runners (trainer/compat/op_seeds.py);
  * it is called the way Estimator calls it (any subset of features,
    labels, mode, params, config), and global_step exists before it runs;
  * non-trainable float variables updated in the replica context (batch-norm
    moving averages) get MEAN aggregation so MirroredStrategy accepts them;
  * tf.compat.v1.train.init_from_checkpoint, in the model_fn or in a
    scaffold_fn, is recorded in `checkpoint_inits` for the runner's load,
    which applies it only when there is no checkpoint (trainer/compat/checkpoint_init.py).
"""

import collections
import functools
import threading

import tensorflow as tf

from model_fn import layers
from trainer.api import errors
from trainer.api import estimator_names
from trainer.api import model_fns
from trainer.compat import checkpoint_init
from trainer.compat import estimator_calls
from trainer.compat import graph_collections
from trainer.compat import op_seeds
from trainer.compat import tf1_semantics
from trainer.compat import tf_private

_v1 = tf.compat.v1
_NONE = tf.VariableAggregation.NONE
_EVAL = estimator_names.ModeKeys.EVAL
_track_tf1_style_variables = tf_private.track_tf1_style_variables()


def features_labels(element):
  """(features, labels) of a dataset element; labels None if there are none."""
  if isinstance(element, (tuple, list)) and len(element) == 2:
    return element[0], element[1]
  return element, None


def plain(fn):
  """fn exempt from AutoGraph: model_fns run as plain Python, as in TF1."""
  return tf.autograph.experimental.do_not_convert(fn)


def fresh_collections(contents=None):
  """The calling thread's own graph collections for the block: empty, as
  in a new graph, or `contents`. Yields the dict that receives the block's
  collections when it ends (trainer/compat/graph_collections.py)."""
  return graph_collections.call_collections(_v1.get_default_graph(),
                                            contents)


def _global_step_read():
  """Creates global_step and its read at the step's start (as Estimator
  does before the model_fn); caches the read where training_util (hooks)
  looks for it. Returns (global_step, read)."""
  global_step = _v1.train.get_or_create_global_step()
  graph = _v1.get_default_graph()
  if not graph.get_collection(tf_private.GLOBAL_STEP_READ_KEY):
    with graph.name_scope(None), graph.name_scope('global_step/'):
      graph.add_to_collection(tf_private.GLOBAL_STEP_READ_KEY,
                              tf.identity(global_step.read_value(), 'read'))
  return global_step, graph.get_collection(tf_private.GLOBAL_STEP_READ_KEY)[0]


def _is_trainable(kwargs):
  trainable = kwargs.get('trainable')
  if trainable is None:
    return kwargs.get('synchronization') != tf.VariableSynchronization.ON_READ
  return trainable


def add_to_collections(variable, kwargs, graph=None):
  """Puts `variable` in the collections a TF1 graph would (no duplicates).

  graph: the graph the model_fn is being built in (default: the current
  one; variable creators run under init_scope, outside it).
  """
  names = kwargs.get('collections')
  names = [_v1.GraphKeys.GLOBAL_VARIABLES] if names is None else list(names)
  if _is_trainable(kwargs) and _v1.GraphKeys.TRAINABLE_VARIABLES not in names:
    names.append(_v1.GraphKeys.TRAINABLE_VARIABLES)
  graph = graph or _v1.get_default_graph()
  for name in names:
    if not any(v is variable for v in graph.get_collection(name)):
      graph.add_to_collection(name, variable)


def _collecting_getter(getter, *args, names=None, **kwargs):
  """get_variable custom getter: adds what it returns to the collections
  (and its name to `names`). A partitioner is dropped, as a TF1 graph in
  the scope of the strategies this runner runs (MirroredStrategy, TPU,
  multi-worker) drops it: they make no partitioned variables."""
  if kwargs.pop('partitioner', None) is not None:
    _v1.logging.log_first_n(
        _v1.logging.WARN, 'Partitioned variables are disabled when using '
        'current tf.distribute.Strategy.', 1)
  trainable = _is_trainable(kwargs)
  aggregation = kwargs.get('aggregation') or _NONE
  if not trainable and aggregation == _NONE:
    dtype = tf.as_dtype(kwargs.get('dtype') or tf.float32)
    kwargs['aggregation'] = (tf.VariableAggregation.MEAN if dtype.is_floating
                             else tf.VariableAggregation.ONLY_FIRST_REPLICA)
  variable = getter(*args, **kwargs)
  add_to_collections(variable, kwargs)
  if names is not None:
    names.add(kwargs['name'] if 'name' in kwargs else args[0])
  return variable



class TensorInitializerError(errors.TrainerError, ValueError):
  """A variable's initial value is a Tensor computed in the model_fn."""


def _is_symbolic(value):
  return tf_private.is_symbolic_tensor(value)


def _lift_tensor_initial_value(kwargs, name):
  """A Tensor initial value made in the traced model_fn
  (`get_variable(initializer=tf.constant(...))`) becomes its constant
  value: the variable is made outside the step, where the Tensor does not
  exist. A Tensor with no constant value cannot be lifted: a named error."""
  initial = kwargs.get('initial_value')
  if not _is_symbolic(initial):
    return
  value = tf.get_static_value(initial)
  if value is None:
    raise TensorInitializerError(
        f'Variable {name}: its initializer is a Tensor computed in the '
        f'model_fn ({initial.name}), which the tf2 runner cannot use: it '
        'makes variables outside the step. Pass an initializer instead '
        '(tf.compat.v1.constant_initializer, a random initializer, or a '
        'callable), or a constant.')
  kwargs['initial_value'] = value

def _is_replica_metric(kwargs):
  """Whether kwargs make a tf.compat.v1.metrics accumulator in a replica of
  a strategy of several replicas (the caller checks the mode is not EVAL):
  one a TF1 graph made and never read in training or prediction (a
  model_fn building eval_metric_ops in every mode), which the strategy
  cannot create inside the step (UnliftableError). In EVAL the strategy
  makes them (in the evaluation's graph), as their aggregation needs."""
  collections_ = kwargs.get('collections') or ()
  if _v1.GraphKeys.METRIC_VARIABLES not in collections_:
    return False
  if tf.distribute.in_cross_replica_context():
    return False
  return tf.distribute.get_strategy().num_replicas_in_sync > 1


class ModelFnModule(tf.Module):
  """A model_fn bound to one set of variables; call it like the model_fn.

  Make it, and trace calls that create variables, inside the strategy scope
  and inside `creation_scope()`.
  """

  def __init__(self, model_fn, name='model_fn', config=None):
    super().__init__(name=name)
    estimator_calls.check_model_fn(model_fn)
    self._model_fn = model_fn
    self._config = config
    self.created = {}  # Variables made outside get_variable, by TF1 name.
    self._seen = collections.Counter()  # Names made in the current call.
    self._call_graph = None  # The graph the current call builds in.
    self._last = threading.local()  # .collections: the thread's last call's.
    self.unsaved_names = set()  # Not in GLOBAL_VARIABLES (metric sums).
    self.checkpoint_inits = checkpoint_init.Recorder()
    self._mode = None  # The mode of the call being built.

  @_track_tf1_style_variables
  def __call__(self, features, labels, mode, params):
    """The model_fn's spec, built on this module's variables."""
    self._seen.clear()
    self._mode = mode
    self._call_graph = _v1.get_default_graph()
    scope = _v1.get_variable_scope()
    # At the graph's root, as Estimator calls it, whatever loop or replica
    # scope the step is traced in: summary tags and op names are TF1's.
    graph = self._call_graph
    inits = self.checkpoint_inits
    with inits.call() as names, checkpoint_init.recording(inits):
      getter = functools.partial(_collecting_getter, names=names)
      with graph.name_scope(None), fresh_collections() as call_collections, (
          _v1.variable_scope(scope, custom_getter=getter,
                             auxiliary_name_scope=False)), (
                                 tf.variable_creator_scope(
                                     self._collecting_creator(graph))), (
                                         tf1_semantics.graph_semantics()), (
                                             op_seeds.derived_op_seeds()):
        self._last.collections = call_collections  # Filled when it ends.
        # Estimator makes both before the model_fn; reads of the global
        # step in the model_fn give its value at the step's start, as in TF1.
        global_step, read = _global_step_read()
        with tf1_semantics.reads_at_step_start(global_step, read):
          return model_fns.call_model_fn(
              self._model_fn, features, labels, mode, params, self._config)

  @property
  def collections(self):
    """The graph collections the calling thread's last call built."""
    return getattr(self._last, 'collections', {})

  def in_call_collections(self):
    """The graph collections as this thread's last call built them (e.g.
    for hooks' begin(), which looks up the global step and summaries)."""
    return fresh_collections(self.collections)

  @_track_tf1_style_variables
  def run_replicas(self, strategy, fn, args):
    """strategy.run(fn, args=args) with this module's get_variable store
    held by the calling thread. MirroredStrategy calls fn in one thread per
    replica; each call sets the store as the graph's and, when it ends,
    puts back what it found. Held here, that is the store itself, so the
    first replica to finish cannot take it from the others (whose
    get_variable after a merge_call, e.g. after init_from_checkpoint at the
    top of the model_fn, would miss every variable)."""
    return strategy.run(fn, args=args)

  @_track_tf1_style_variables
  def run_in_variable_store(self, fn, *args):
    """fn(*args) with this module's get_variable store and TF1 semantics.

    For a spec's scaffold_fn: init_from_checkpoint finds variables by name
    (and is recorded, as in the model_fn), and an EMA saver maps them by
    `v.op.name`.
    """
    with tf1_semantics.graph_semantics(), checkpoint_init.recording(
        self.checkpoint_inits):
      return fn(*args)

  def _creator(self, next_creator, **kwargs):
    """Creates a variable on the first call, returns it on later ones."""
    base = kwargs.get('name') or 'Variable'
    absolute = base.endswith('/')  # 'a/b/' names exactly a/b, no scope.
    scope = _v1.get_default_graph().get_name_scope()
    full = base.rstrip('/') if absolute or not scope else f'{scope}/{base}'
    index = self._seen[full]
    self._seen[full] += 1
    key = full if index == 0 else f'{full}_{index}'
    if key not in self.created:
      if index:
        kwargs['name'] = f'{base[:-1]}_{index}/' if absolute else (
            f'{base}_{index}')
      _lift_tensor_initial_value(kwargs, key)
      if self._mode != _EVAL and _is_replica_metric(kwargs):
        self.created[key] = tf_private.replica_local_variable(**kwargs)
      else:
        self.created[key] = next_creator(**kwargs)
    variable = self.created[key]
    requested = kwargs.get('collections')
    if requested is not None and (
        _v1.GraphKeys.GLOBAL_VARIABLES not in requested):
      self.unsaved_names.add(layers.variable_name(variable))
    return variable

  def _collecting_creator(self, graph):
    """The innermost creator of one call: whichever creator makes or finds
    the variable (a replica other than the first gets the first's from its
    strategy), this call's collections receive it, as in a TF1 graph."""

    def creator(next_creator, **kwargs):
      variable = next_creator(**kwargs)
      add_to_collections(variable, kwargs, graph)
      return variable

    return creator

  def creation_scope(self):
    """Variable-creator scope returning earlier calls' tf.Variables by name.

    Enter it eagerly (outside tf.function) so that init_scope sees it too.
    """
    return tf.variable_creator_scope(self._creator)

  def variables_by_name(self, local=False):
    """{TF1 name: variable} of the model_fn's GLOBAL_VARIABLES (what a TF1
    Saver writes), or, if `local`, of the others (metric accumulators)."""
    result = {}
    for variable in self.variables:
      name = layers.variable_name(variable)
      if (name in self.unsaved_names) == local:
        result.setdefault(name, variable)
    return dict(sorted(result.items()))
