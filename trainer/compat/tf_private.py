"""Private or version-dependent TF internals the runners read or call.

Every module that touches TF internals lives in trainer/compat (kept so by
tests/layering_test.py): this one for what the runners read and call, and
checkpoint_init, facade_private, iterator_capture, op_seeds and
tf1_semantics for the TF1 behaviours they reproduce or patch in.

Eight things the tf2 runner needs have no public API:
  * the Estimator's loss scaling: a tf.compat.v1 optimizer divides the loss
    by the replica count only while the strategy's private flag
    `_scale_loss_for_estimator` is set (Estimator sets it; so do we);
  * the variable store of `track_tf1_style_variables`, public in Keras 2
    (`tf.compat.v1.keras.utils`, also on TF >= 2.16 when tf.keras is
    tf-keras, see trainer/__init__.py) and otherwise only in tf-keras'
    source tree;
  * the init ops of tf.summary writers made in graph mode (a collection with
    a private name), so host_call writers can be initialised and flushed;
  * a Session callable that takes feeds without going through
    `Session.run` (`make_callable` with a feed_list does, ~0.4 ms of Python
    per call): host_call runs once per training step;
  * the graph collection where training_util caches the global step's read,
    the tensor hooks fetch as the step (`GLOBAL_STEP_READ_KEY`);
  * the coordination service's heartbeat timeout, after which the workers
    of a MultiWorkerMirroredStrategy job give up on a lost peer
    (`configure_peer_heartbeat`);
  * tf.function's first-call variable creation on its own
    (`create_variables`): get_concrete_function of a function that creates
    variables traces it twice, once creating them and once more without;
  * a MirroredVariable's value without the cross-replica identity op
    (`read_scalar`): the global step, read three times a loop.
tests/compat/tf_private_test.py covers the first four and the last two on
every lane, tf2_hooks_test the fifth, multi_worker_preemption_test the
sixth.
"""

import contextlib

import numpy as np
import tensorflow as tf

# training_util's collection of the global step's cached read.
GLOBAL_STEP_READ_KEY = 'global_step_read_op_cache'


def track_tf1_style_variables():
  """The decorator that gives a tf.Module a get_variable store (TF1 names)."""
  try:
    return tf.compat.v1.keras.utils.track_tf1_style_variables
  except AttributeError:
    pass  # Keras 3: the shim lives in tf-keras only.
  try:
    from tf_keras.src.legacy_tf_layers import variable_scope_shim  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise ImportError(
        'The tf2 runner needs tf-keras on TensorFlow without Keras 2 (pip '
        f'install tf-keras=={tf.__version__.rsplit(".", 1)[0]}.*): {e}') from e
  return variable_scope_shim.track_tf1_style_variables


@contextlib.contextmanager
def estimator_loss_scaling(strategy):
  """While active (at trace time), v1 optimizers scale the loss by 1/replicas.

  That is what Estimator does with a distribution strategy and what
  CrossShardOptimizer does on TPU: with gradients summed across replicas the
  update equals the one of the global batch.
  """
  if not hasattr(strategy, '_scale_loss_for_estimator_enabled'):
    raise RuntimeError(
        f'TensorFlow {tf.__version__}: {type(strategy).__name__} has no '
        '_scale_loss_for_estimator_enabled; the tf2 runner cannot combine '
        'v1-optimizer losses across replicas as Estimator does.')
  with strategy._scale_loss_for_estimator_enabled():  # pylint: disable=protected-access
    yield


# summary_ops_v2._SUMMARY_WRITER_INIT_COLLECTION_NAME, the same in TF 2.15-2.21.
_SUMMARY_WRITER_INIT_COLLECTION = '_SUMMARY_WRITER_V2'


def summary_writer_init_ops():
  """Init ops of the tf.summary writers created in the default (v1) graph."""
  return tf.compat.v1.get_collection(_SUMMARY_WRITER_INIT_COLLECTION)


def global_step_read():
  """The graph's read of global_step at the step's start, which Estimator
  makes before the model_fn and its hooks fetch (training_util's private
  cache; None without a global step)."""
  from tensorflow.python.training import training_util  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return training_util._get_or_create_global_step_read()  # pylint: disable=protected-access


def read_scalar(variable):
  """The value of a scalar variable (the global step) as numpy, read
  without the cross-replica identity op of a MirroredVariable: a
  MirroredVariable holds the same value on every device, and numpy() in
  cross-replica context reads the component of the current device (or the
  primary) through an extra identity op, 0.29 ms against 0.08 ms a read on
  2 logical CPUs (bench/facade.py mirrored, 3 reads a loop). Other
  variables (TPU, per-worker, plain) read as numpy() does."""
  from tensorflow.python.distribute import values  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  if type(variable) is values.MirroredVariable:  # pylint: disable=unidiomatic-typecheck
    return variable._get_on_device_or_primary().numpy()  # pylint: disable=protected-access
  return variable.numpy()


def fed_session_callable(session, feeds, fetches):
  """f(*feed_values) -> [values of the tensors in `fetches`] that also runs
  the ops in `fetches`, in one call into the C++ session (what Keras' graph
  backend uses). feeds: placeholders of session.graph."""
  from tensorflow.core.protobuf import config_pb2  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  options = config_pb2.CallableOptions()
  options.feed.extend(t.name for t in feeds)
  for fetch in fetches:
    if isinstance(fetch, tf.Operation):
      options.target.append(fetch.name)
    else:
      options.fetch.append(fetch.name)
  run = session._make_callable_from_options(options)  # pylint: disable=protected-access
  dtypes = [t.dtype.as_numpy_dtype for t in feeds]

  def call(*values):  # The C++ callable does not convert dtypes.
    return run(*[np.asarray(v, d) for v, d in zip(values, dtypes)])

  return call


# What tf.estimator checks a spec's tensors against: graph and eager tensors,
# variables (core.Tensor covers them all on TF 2.15-2.21).
TENSOR_TYPES = (tf.compat.v2.__internal__.types.Tensor,)


def create_variables(fn, *args):
  """Traces `fn(*args)` once in a tf.function, as its first call does:
  the variables it creates are made (initialisers lifted out of the trace)
  and initialised; nothing of the trace runs. Returns the tf.function.

  get_concrete_function would do the same and then trace `fn` a second
  time, with variable creation forbidden, to hand back a function nobody
  here calls: for ResNet-50 tens of seconds of start-up. Without the
  private methods (a TF release that renames them) that is what happens."""
  function = tf.function(fn, autograph=False)
  initialize = getattr(function, '_initialize', None)
  initialize_variables = getattr(
      function, '_initialize_uninitialized_variables', None)
  if initialize is None or initialize_variables is None:
    function.get_concrete_function(*args)
    return function
  initializers = []
  initialize(args, {}, add_initializers_to=initializers)
  initialize_variables(initializers)
  return function


def inside_function():
  """True while a tf.function is being traced (the graph is a FuncGraph)."""
  return tf.compat.v1.get_default_graph().building_function


def export_utils():
  """TF core's SavedModel signature helpers (model_utils.export_utils), the
  module tf.estimator's export_lib re-exported up to 2.15."""
  from tensorflow.python.saved_model.model_utils import export_utils as module  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return module


def flush_summary_writer(writer):
  """An op flushing the tf.summary writer resource `writer` (graph mode)."""
  return tf.raw_ops.FlushSummaryWriter(writer=writer)


def training_module():
  """tensorflow.python.training.training, looked up at each call: Estimator
  calls its MonitoredTrainingSession through it (tests patch it there)."""
  from tensorflow.python.training import training  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return training


def session_run_hooks_module():
  """tensorflow.python.training.basic_session_run_hooks: its timers read
  the module's `time` (replaced while the tf2 runner replays a loop)."""
  from tensorflow.python.training import basic_session_run_hooks  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return basic_session_run_hooks


def replica_local_variable(**kwargs):
  """A plain resource variable from variable-creator `kwargs`, made outside
  any tf.function and outside every variable creator (a strategy's too):
  for accumulators made in a replica that the strategy must not mirror."""
  from tensorflow.python.ops import resource_variable_ops  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  initial = kwargs.get('initial_value')
  with tf.init_scope():
    return resource_variable_ops.ResourceVariable(
        initial_value=initial() if callable(initial) else initial,
        trainable=False, name=kwargs.get('name'),
        dtype=kwargs.get('dtype'))


def final_ops_of(hook):
  """What a tf.compat.v1.train.FinalOpsHook runs at its end (its
  `final_ops`: a tensor, list or dict, or None)."""
  return hook._final_ops  # pylint: disable=protected-access


def _evaluation_module():
  """tensorflow.python.training.evaluation, looked up at each call (as
  Estimator.evaluate does; tests patch it there)."""
  from tensorflow.python.training import evaluation  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return evaluation


def evaluate_once(**kwargs):
  """evaluation._evaluate_once(**kwargs): update ops per batch and final
  ops once, in a MonitoredSession, what Estimator.evaluate runs; the final
  ops' values."""
  return _evaluation_module()._evaluate_once(**kwargs)  # pylint: disable=protected-access


def stop_after_n_evals_hook(num_evals):
  """evaluation._StopAfterNEvalsHook: stops an evaluation after
  `num_evals` runs of its update op."""
  return _evaluation_module()._StopAfterNEvalsHook(num_evals=num_evals)  # pylint: disable=protected-access


def get_or_create_eval_step():
  """evaluation._get_or_create_eval_step: the graph's eval step counter,
  which _evaluate_once's hooks count with."""
  return _evaluation_module()._get_or_create_eval_step()  # pylint: disable=protected-access


def create_global_step_read(graph):
  """Caches the read of global_step that Estimator makes before the model_fn
  (training_util's private cache, GLOBAL_STEP_READ_KEY)."""
  from tensorflow.python.training import training_util  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return training_util._get_or_create_global_step_read(graph)  # pylint: disable=protected-access


def saved_model_variables_path(export_dir):
  """(variables dir, variables checkpoint prefix) of a SavedModel dir."""
  from tensorflow.python.saved_model import path_helpers  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return (path_helpers.get_variables_dir(export_dir),
          path_helpers.get_variables_path(export_dir))


def saver_for_checkpoint(checkpoint):
  """A sharded tf.compat.v1 Saver of what a tf.train.Checkpoint tracks (the
  saver Estimator exports a Scaffold(saver=Checkpoint) with)."""
  from tensorflow.python.checkpoint import graph_view  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return tf.compat.v1.train.Saver(
      var_list=graph_view.ObjectGraphView(checkpoint).frozen_saveable_objects(),
      sharded=True)


def add_train_op_to_builder(builder, train_op):
  """SavedModelBuilder._add_train_op: what Estimator's export does to keep a
  TRAIN graph's train op in the SavedModel."""
  builder._add_train_op(train_op)  # pylint: disable=protected-access


def save_builder(builder, as_text):
  """SavedModelBuilder.save, with a text SavedModel every protobuf reads.

  TF >= 2.16's builder writes as_text with str(proto); under protobuf's upb
  backend (5.x) str() leaves '"' unescaped in bytes fields (a Saver's
  collection holds one), so the .pbtxt cannot be parsed back. The text is
  rewritten with text_format, which escapes, as TF 2.15's protobuf did.
  """
  path = builder.save(as_text)
  if as_text:
    from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
    with tf.io.gfile.GFile(path, 'w') as f:
      f.write(text_format.MessageToString(builder._saved_model))  # pylint: disable=protected-access
  return path


def standard_ps_ops():
  """The op types a replica device setter places on ps tasks."""
  from tensorflow.python.training import device_setter  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return list(device_setter.STANDARD_PS_OPS)


def graph_mode():
  """A context in which TF runs graph mode, as Estimator's methods do (TF1
  FileWriters and Sessions refuse eager execution)."""
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return context.graph_mode()


def configure_peer_heartbeat(cluster_spec, timeout_secs):
  """Starts this process's coordination service config as
  MultiWorkerMirroredStrategy would (same leader, same chief/worker jobs),
  with `timeout_secs` as the heartbeat timeout after which a silent worker
  is declared lost and the others' collectives fail. Must run before the
  strategy is made (it keeps a config already set). False (nothing done)
  when a coordination service is already configured."""
  # The strategy module's own imports: the proto moved between releases.
  from tensorflow.python.distribute import collective_all_reduce_strategy as mwms  # pylint: disable=g-import-not-at-top
  coordination_config_pb2 = mwms.coordination_config_pb2
  multi_worker_util = mwms.multi_worker_util
  from tensorflow.python.eager import context  # pylint: disable=g-import-not-at-top
  if context.context().coordination_service is not None:
    return False
  jobs = [coordination_config_pb2.CoordinatedJob(
              name=job, num_tasks=cluster_spec.num_tasks(job))
          for job in ('chief', 'worker') if job in cluster_spec.jobs]
  context.context().configure_coordination_service(
      service_type='standalone',
      service_leader=multi_worker_util.coordination_leader(cluster_spec),
      coordinated_jobs=jobs,
      heartbeat_timeout_in_ms=int(timeout_secs * 1000))
  return True


def per_worker_type_spec(value):
  """The type spec a ClusterCoordinator traces a scheduled function with
  for a per-worker value (a per-worker dataset's iterator), as its
  schedule() does (the value's private `_type_spec`); any other value
  itself."""
  from tensorflow.python.distribute.coordinator import values as coordinator_values  # pylint: disable=g-import-not-at-top
  if isinstance(value, coordinator_values.PerWorkerValues):
    return value._type_spec  # pylint: disable=protected-access
  return value


def loss_scaled_by_optimizer(graph):
  """Whether a tf.compat.v1 optimizer scaled the loss of `graph`'s replica
  by 1/replicas (the flag it sets on the graph, as Estimator reads it for
  the loss it reports)."""
  return getattr(graph, '_is_loss_scaled_by_optimizer', False)


def is_symbolic_tensor(value):
  """True for a graph (symbolic) Tensor, False for an eager one or any
  other value (an eager tensor has its `_numpy`)."""
  return isinstance(value, tf.Tensor) and not hasattr(value, '_numpy')


def current_learning_rate(optimizer):
  """The variable a Keras optimizer recomputes its learning rate into at
  every step (its `_current_learning_rate`); None if it has none."""
  return getattr(optimizer, '_current_learning_rate', None)


def data_service_worker_address(server):
  """'HOST:PORT' a tf.data service WorkerServer listens on (its private
  `_address`: WorkerServer has no public one)."""
  return server._address  # pylint: disable=protected-access
