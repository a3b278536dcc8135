"""Training under the tf2 runner: TPUEstimator's loop with tf.distribute.

The model_fn's own train_op (its v1 optimizer, global_step, UPDATE_OPS)
drives training, its loss scaled by 1/replicas as Estimator and
CrossShardOptimizer do; a loop of up to iterations_per_loop steps is one
tf.function call (an explicit tf.while_loop), with the replica step
XLA-compiled when chosen (strategy.choose_jit). Each train() call runs the
input_fn anew, as Estimator does. After each loop, on the host:
  * host_call runs on the tensors of every step gathered from all replicas,
    as TPUEstimator does (host_graph.py), on a host thread while the next
    loop runs (TPUEstimator's outfeed thread), all done when train() ends;
    reads of the global step in the model_fn give the step's value before
    its update, as in TF1, so summaries land at TPUEstimator's steps;
  * SessionRunHooks (the call's, the spec's training_hooks and Estimator's
    own loss / global_step/sec summary hooks) see each step's fetches
    (hook_runner.py), from the first replica; a hook that may stop
    training between two steps runs inside the loop after each step in
    one process, or gets loops of one step across workers;
  * the loop driver (trainer/runtime/driver.py) decides checkpoints, the
    progress line, non-finite checks and SIGTERM by the loop policy
    (trainer/runtime/loop.py); a hook's request_stop() ends training after
    the loop;
    CheckpointSaverListeners are called around each checkpoint and a
    CheckpointSaverHook sets the call's cadence (checkpoint_listeners.py).
Under ParameterServerStrategy (a TF_CONFIG cluster with ps tasks) the chief
coordinates: each loop's steps are shared between the workers, each share a
call of the loop function scheduled on a worker, on that worker's input
(parameter_servers.py); the rest happens on the chief as above.
The end of the input ends training as in Estimator: the loop takes each
batch with get_next_as_optional, stops early when there is none, and
training stops there with a checkpoint. The step's first trace is checked
for variable updates nothing fetches (graph_check.py).
"""

import contextlib
import os

import numpy as np
import tensorflow as tf

from tensorflow.core.framework import tensor_pb2

from trainer.api import estimator_names as estimator_compat
from trainer.compat import facade_private
from trainer.compat import tf_private
from trainer.guard import nonfinite
from trainer.engines.tf2 import checkpoint_listeners
from trainer.engines.tf2 import graph_check
from trainer.engines.tf2 import host_graph
from trainer.engines.tf2 import model_fn_adapter
from trainer.engines.tf2 import name_checkpoints
from trainer.engines.tf2 import parameter_servers
from trainer.engines.tf2 import scaffold as scaffold_lib
from trainer.engines.tf2 import hook_runner as hooks_lib
from trainer.engines.tf2 import summaries
from trainer.runtime import driver
from trainer.runtime import profiling
from trainer.runtime import strategy as strategy_lib
from trainer.runtime import tf_config

_MEAN = tf.distribute.ReduceOp.MEAN
_v1 = tf.compat.v1
_TRAIN = estimator_compat.ModeKeys.TRAIN


class Training(driver.LoopTrainer):
  """The training of a Tf2Engine (its strategy, module, input): the loop
  function, and, for the loop driver (trainer/runtime/driver.py), the
  LoopTrainer of the current train() call."""

  def __init__(self, runner, steps_per_loop, policy):
    self._runner = runner
    self._steps_per_loop = steps_per_loop
    self._policy = policy
    self._built_for = None  # (input_fn, hooks) the loop was built for.
    self._iterator = None
    self._loop = None
    self._spec = None  # The normalised spec of the last trace.
    self._host_call = None  # (fn, tensors) recorded while tracing.
    self._host_graph = None
    self._host_step = None
    self._host_steps = None  # host_graph.StepRunner of the host_call.
    self._hooks = None  # hooks.HookRunner of the last trace.
    self._call_hooks = ()
    self._hooks_in_trace = False  # The loop's trace runs the hooks.
    self._checks = graph_check.Recorder()
    self._hook_steps = None  # Steps per loop user hooks impose, if any.
    self._hooks_in_loop = False  # Hooks run between the loop's steps.
    self._in_loop = _InLoopHooks()
    self._to_step = None  # The last step of the current train() call.
    self._listeners = None  # checkpoint_listeners.Listeners of a call.
    self.last_loss = None  # The last step's loss of the current call.
    self._profile = profiling.StepWindow(  # --profile_steps, per loop.
        runner.model_dir, runner.settings.profile_steps)

  def _replica_step(self, features, labels):
    runner = self._runner
    started = graph_check.Recorder.start()
    spec = runner.call_model_fn(features, labels, _TRAIN)
    if spec.train_op is None or spec.loss is None:
      raise ValueError('model_fn returned no train_op or no loss in TRAIN.')
    self._spec = spec
    host_tensors = []
    if spec.host_call is not None:
      fn, tensors = spec.host_call
      host_tensors = tf.nest.flatten(tensors)
      self._host_call = (fn, tensors)
    reported = self._reported_loss(spec.loss)
    hook_tensors = self._trace_hooks(spec, reported) if (
        self._hooks_in_trace) else []
    self._checks.add(  # Keras layers update batch-norm statistics by
        started, [spec.train_op, spec.loss] + host_tensors +  # themselves.
        list(hook_tensors), [v for v in runner.module.variables
                             if not v.trainable])
    with tf.control_dependencies([spec.train_op]):
      loss = tf.identity(reported)
      host_tensors = [tf.identity(t) for t in host_tensors]
      hook_tensors = [tf.identity(t) for t in hook_tensors]
    return loss, host_tensors, hook_tensors

  def _reported_loss(self, loss):
    """The loss Estimator reports (its `loss` summary, progress line, NaN
    check) for this replica's `loss`: over several replicas of a
    tf.distribute strategy, their mean when the model_fn's v1 optimizer
    scaled the loss by 1/replicas, else their sum (Estimator's
    _get_loss_reduce_op_for_reporting); on TPU the replica's own, as
    TPUEstimator reports the first shard's."""
    runner = self._runner
    context = tf.distribute.get_replica_context()
    if (runner.strategy_kind == 'tpu' or context is None or
        context.num_replicas_in_sync == 1):
      return loss
    graph = tf.compat.v1.get_default_graph()
    if tf_private.loss_scaled_by_optimizer(graph):
      op = tf.compat.v1.distribute.get_loss_reduction()
    else:
      op = tf.distribute.ReduceOp.SUM
    return context.all_reduce(op, loss)

  def _trace_hooks(self, spec, loss):
    """Traces the hooks of this step on the process's first replica (the
    first to get here in this trace), in the model_fn's collections at the
    graph's root, in MonitoredTrainingSession's order: the saving
    listeners' (CheckpointSaverHook's), the spec's training_chief_hooks
    (chief only), Estimator's summary hooks, the call's hooks, the spec's
    training_hooks; their fetches (placeholders on the other replicas).
    The variables are loaded: the session starts here. `loss`: the
    reported loss."""
    if self._hooks is not None and self._hooks.traced_in_current_graph():
      return hooks_lib.placeholders_like(self._hooks.traced_tensors)
    runner = self._runner
    settings = runner.settings
    graph = tf.compat.v1.get_default_graph()
    with runner.module.in_call_collections(), graph.name_scope(None):
      default_hooks = summaries.training_hooks(
          loss, runner.model_dir, settings.save_summary_steps,
          settings.log_step_count_steps,
          compiled=runner.jit or runner.strategy_kind == 'tpu')
      chief_hooks = list(spec.chief_hooks) if (
          tf_config.is_chief_task()) else []
      user_hooks = chief_hooks + list(self._call_hooks) + list(spec.hooks)
      listeners_hook = _ListenersHook(lambda: self._listeners, runner)
      hook_runner = hooks_lib.HookRunner(
          [listeners_hook] + chief_hooks + default_hooks +
          list(self._call_hooks) + list(spec.hooks))
      tensors = hook_runner.trace(session_step=runner.global_step)
    self._hooks = hook_runner
    # Estimator runs hooks after every session.run: one step on CPU and
    # GPU, one loop on TPU. A user hook may stop training at any of them;
    # those known not to (see _bounds_loops) keep the loops. In one
    # process the hooks then run inside the loop after each step (a
    # py_function, _InLoopHooks), which stops where a hook asks; across
    # workers or parameter servers (where every worker must stop at the
    # same step) a loop is one step.
    bounding = [hook for hook in user_hooks
                if _bounds_loops(hook, self._call_hooks, self._to_step)]
    per_step = bool(bounding) and runner.strategy_kind != 'tpu'
    self._hooks_in_loop = per_step and (
        runner.strategy_kind in _IN_PROCESS_KINDS)
    self._hook_steps = 1 if per_step and not self._hooks_in_loop else None
    return tensors

  @contextlib.contextmanager
  def _scope(self):
    """Where a loop is traced and run: the runner's scopes, loss scaling."""
    with self._runner.scope(), tf_private.estimator_loss_scaling(
        self._runner.strategy):
      yield

  def _build(self, input_fn):
    """Traces the step once (creating variables, then loading them as the
    spec's Scaffold says), then the loop function."""
    runner = self._runner
    strategy = runner.strategy
    self._iterator = self._new_iterator(input_fn)
    def make_step():  # A compiled step traces once: one per trace here.
      step = model_fn_adapter.plain(self._replica_step)
      if runner.jit:
        step = tf.function(step, jit_compile=True, autograph=False)
      return step

    steps = [make_step()]

    def run_step(element):
      return runner.module.run_replicas(
          strategy, steps[-1], model_fn_adapter.features_labels(element))

    self._hooks_in_trace = False  # Hooks begin once the session exists.
    with self._scope():  # One trace, the loop's below the second.
      tf_private.create_variables(lambda iterator: run_step(next(iterator)),
                                  parameter_servers.traceable(self._iterator))
    if parameter_servers.coordinator_of(strategy) is not None:
      parameter_servers.describe_placement(runner.module)
    scaffold = runner.load(self._spec)  # Its ScaffoldError first.
    runner.checkpoints.keep_at_most(scaffold_lib.checkpoints_to_keep(
        scaffold, runner.settings.keep_checkpoint_max))
    self._hooks_in_trace = True
    steps.append(make_step())
    self._checks.check(_TRAIN)
    runner.stale = False
    host_dtypes = [t.dtype for t in tf.nest.flatten(self._host_call[1])
                   ] if self._host_call else []

    def train_loop(iterator, steps):
      def body(i, ended, stopped, losses, host, hooked):
        element = iterator.get_next_as_optional()

        def train_step():
          loss, host_tensors, hook_tensors = run_step(element.get_value())
          written = losses.write(i, strategy.reduce(_MEAN, loss, axis=None))
          host_written = tuple(array.write(i, strategy_lib.gather(strategy, t, axis=0))
                               for array, t in zip(host, host_tensors))
          # The first replica's (see _trace_hooks): run by the hooks now,
          # or serialised for their replay after the loop (the hooks are
          # traced with this body, after the arrays' dtypes are set).
          first = [strategy.experimental_local_results(t)[0]
                   for t in hook_tensors]
          stop = stopped
          if self._hooks_in_loop:
            stop = self._in_loop.after_step(i, first)
            first = []
          hooked_written = hooked.write(i, _serialized(first))
          return i + 1, ended, stop, written, host_written, hooked_written

        def input_ended():
          return i, tf.constant(True), stopped, losses, host, hooked

        return tf.cond(element.has_value(), train_step, input_ended)

      count, _, _, losses, host, hooked = tf.while_loop(
          lambda i, ended, stopped, *_: tf.logical_not(tf.logical_or(
              i >= steps, tf.logical_or(ended, stopped))), body,
          (tf.constant(0), tf.constant(False), tf.constant(False),
           tf.TensorArray(tf.float32, size=steps),
           tuple(tf.TensorArray(d, size=steps) for d in host_dtypes),
           tf.TensorArray(tf.string, size=steps, infer_shape=False,
                          element_shape=tf.TensorShape([None]))))
      done = tf.range(count)  # Fewer than `steps` if the input ended.
      return (losses.gather(done), tuple(a.gather(done) for a in host),
              hooked.gather(done))

    self._loop = tf.function(train_loop, autograph=False)
    with self._scope():  # Traced now, so the hooks see the loop's graph.
      self._loop.get_concrete_function(
          parameter_servers.traceable(self._iterator), tf.constant(1))
    self._checks.check(_TRAIN)
    runner.module.checkpoint_inits.take()  # Applied (or not) by the load.

  def _new_iterator(self, input_fn):
    """An iterator of the input_fn's distributed dataset: this process's,
    or, under a ClusterCoordinator, one on each worker."""
    runner = self._runner
    coordinator = parameter_servers.coordinator_of(runner.strategy)
    if coordinator is None:
      return iter(runner.dataset(_TRAIN, input_fn))
    return iter(coordinator.create_per_worker_dataset(
        lambda: runner.dataset(_TRAIN, input_fn)))

  def _ensure_built(self, input_fn, hooks):
    """Builds the loop for this input_fn and these hooks, or starts a new
    pass of the input (Estimator calls the input_fn on every train())."""
    runner = self._runner
    if self._loop is None or self._built_for != (input_fn, tuple(hooks)):
      self._call_hooks = tuple(hooks)
      self._build(input_fn)
      self._built_for = (input_fn, tuple(hooks))
    else:
      self._iterator = self._new_iterator(input_fn)
      if self._hooks:  # Fresh hook state, as in a new Estimator.train().
        self._hooks.restart()
      if runner.stale:  # An evaluation loaded other weights: come back.
        runner.checkpoints.restore(runner.latest_checkpoint())
        runner.stale = False

  def _run_host_calls(self, host_values):
    if not self._host_call or not host_values or not len(host_values[0]):
      return  # No host_call, or the input ended before the loop's 1st step.
    fn, tensors = self._host_call
    if self._host_graph is None:
      specs = tf.nest.pack_sequence_as(
          tensors, [host_graph.spec_of(v[0]) for v in host_values])
      self._host_graph = host_graph.HostGraph(fn, specs)
      self._host_step = self._host_graph.callable_for(
          self._host_graph.outputs)
      self._host_steps = host_graph.StepRunner()
    self._host_steps.submit(self._host_step, host_values)

  def _finish_host_calls(self):
    """Waits for the host_call of every loop so far; flushes its writers."""
    if self._host_graph is not None:
      self._host_steps.wait()
      self._host_graph.flush()

  def _run_loop(self, num_steps):
    """One loop of up to `num_steps` steps; (losses of the steps run,
    whether a hook asked to stop). Fewer losses: the input ended."""
    first_step = self._runner.global_step()
    self._profile.before_steps(first_step, num_steps)
    self._in_loop.start(self._hooks if self._hooks_in_loop else None,
                        first_step)
    replaying = self._hooks.replaying() if self._hooks_in_loop else (
        contextlib.nullcontext())
    with self._scope(), replaying:
      losses, host_values, hook_values = parameter_servers.run_loop(
          self._runner.strategy, self._loop, self._iterator, num_steps)
    losses = losses.numpy()
    self._profile.after_steps(self._runner.global_step())
    self._run_host_calls([v.numpy() for v in host_values])
    stop = False
    if self._hooks:
      if self._hooks_in_loop:
        stop = self._in_loop.finish()  # A hook's exception: raised here.
      else:
        per_step = _deserialized(hook_values.numpy())
        stop = self._hooks.after_steps(per_step, first_step,
                                       self._runner.global_step)
      if len(losses) < num_steps and not stop:  # The input ended.
        self._hooks.input_ended(self._runner.global_step)
    return losses, stop

  def steps(self, num_steps, input_fn):
    """Runs `num_steps` steps in loops of <= steps_per_loop; their losses.

    No checkpoint, progress line, checks or hooks' stop: `train` adds those.
    """
    if self._loop is None:
      self._ensure_built(input_fn, ())
    losses = []
    while len(losses) < num_steps:
      n = min(self._steps_per_loop, num_steps - len(losses))
      loop_losses, _ = self._run_loop(n)
      losses.extend(loop_losses.tolist())
      if len(loop_losses) < n:
        self._finish_host_calls()
        raise ValueError(f'The input ended after {len(losses)} of '
                         f'{num_steps} steps.')
    self._finish_host_calls()
    return np.array(losses, dtype=np.float32)

  def train(self, to_step, input_fn, hooks=(), saving_listeners=()):
    """Trains until global_step reaches `to_step` (None: until the input
    ends), as the policy says (trainer/runtime/driver.py owns the loop); a
    CheckpointSaverHook in `hooks` sets this call's checkpoint cadence.
    Returns the loss of the last step trained (None if none was)."""
    runner = self._runner
    hooks, cadence, more = checkpoint_listeners.split_saver_hooks(
        hooks, runner.model_dir)
    self._listeners = checkpoint_listeners.Listeners(
        list(saving_listeners) + more, runner.global_step)
    policy = self._policy if cadence is None else self._policy.replace(
        save_every_steps=cadence[0], save_every_secs=cadence[1])
    self._to_step = to_step  # For _bounds_loops, when the step is traced.
    self._ensure_built(input_fn, hooks)
    self.last_loss = None
    driver.train(self, policy, to_step)
    return self.last_loss

  # -- the loop driver's LoopTrainer, for the current train() call --------

  def global_step(self):
    return self._runner.global_step()

  def latest_checkpoint(self):
    return self._runner.latest_checkpoint()

  def begin(self):
    if self._hooks.session_started:  # At the loop's trace.
      self._hooks.steps_start()
    else:  # A later train() with the same loop: hooks.restart() began.
      self._hooks.after_create_session(self._runner.global_step)

  def max_loop_steps(self):
    return self._hook_steps

  def train_loop(self, num_steps):
    losses, stop = self._run_loop(num_steps)
    if len(losses):
      self.last_loss = losses[-1]
    return driver.LoopResult(losses=losses, stop=stop)

  def finite_variables(self):
    return nonfinite.finite_by_name(self._runner.variables())

  def save(self, step):
    # Estimator's CheckpointSaverHook's lines around a save.
    runner, listeners = self._runner, self._listeners
    tf.compat.v1.logging.info(
        'Calling checkpoint listeners before saving checkpoint %d...', step)
    listeners.before_save(step)
    tf.compat.v1.logging.info(
        'Saving checkpoints for %d into %s.', step,
        os.path.join(runner.model_dir, name_checkpoints.CHECKPOINT_BASENAME))
    runner.checkpoints.save(step)
    tf.compat.v1.logging.info(
        'Calling checkpoint listeners after saving checkpoint %d...', step)
    return listeners.after_save(step)

  def end(self):
    self._hooks.end(self._runner.global_step)
    self._profile.stop(self._runner.global_step())
    self._finish_host_calls()

  def any_worker(self, flag):
    return strategy_lib.any_worker(self._runner.strategy, flag)


def _bounds_loops(hook, call_hooks, to_step):
  """Whether `hook` may end training between two steps of a loop, so that
  loops must be one step (Estimator's session.run per step). Not so for a
  hook that says its runs' boundaries do not matter (the launcher's guard
  hooks), nor for a StopAtStepHook of the call whose last step (known once
  the hooks' after_create_session ran) is at or beyond the call's last
  step, where the loops end anyway (Estimator's train(steps, max_steps))."""
  if not getattr(hook, 'steps_between_runs_matter', True):
    return False
  if (type(hook) is _v1.train.StopAtStepHook and  # pylint: disable=unidiomatic-typecheck
      any(hook is h for h in call_hooks) and to_step is not None):
    _, last_step = facade_private.stop_hook_config(hook)
    return last_step is None or last_step < to_step
  return True


# Strategies whose loop runs in this process alone (no other worker must
# stop at the same step): hooks can run between its steps.
_IN_PROCESS_KINDS = ('default', 'mirrored', 'OneDeviceStrategy')


class _InLoopHooks:
  """Runs the hooks after each step inside the loop (a tf.py_function
  the loop's tf.while_loop waits for), so that a hook's request_stop() ends
  the loop after that step, as a Session's run would; an exception a hook
  raises ends it too, and is raised again, as it was, after the loop
  (TensorFlow would wrap it in its own error)."""

  def __init__(self):
    self._hooks = None  # The HookRunner of the loop running, if any.
    self._first_step = 0
    self._stop = False
    self._error = None

  def start(self, hooks, first_step):
    """Before a loop: `hooks` (a HookRunner, or None) run after its
    steps, the first of which starts at global step `first_step`."""
    self._hooks, self._first_step = hooks, first_step
    self._stop, self._error = False, None

  def after_step(self, index, values):
    """In the traced loop body, after the step: a scalar bool tensor,
    whether to stop; the hooks get `values` (their fetches' tensors) of the
    loop's step `index`."""
    stop = tf.py_function(self._run, [index] + list(values), tf.bool)
    stop.set_shape([])
    return stop

  def _run(self, index, *values):
    if self._hooks is None:
      return False
    try:
      step_values = [[_numpy(v) for v in values]]
      self._stop = self._hooks.after_steps(
          step_values, self._first_step + int(index), None) or self._stop
    except BaseException as e:  # pylint: disable=broad-except
      self._error = e  # Raised by finish(), with its own type and trace.
      return True
    return self._stop

  def finish(self):
    """After the loop: whether a hook asked to stop; raises what a hook
    raised."""
    error, self._error, self._hooks = self._error, None, None
    if error is not None:
      raise error
    return self._stop


def _numpy(tensor):
  """The value of an eager tensor as _deserialized gives it."""
  array = tensor.numpy()  # Scalars: numpy's, or bytes.
  return array[()] if isinstance(array, np.ndarray) and array.ndim == 0 else (
      array)


def _serialized(tensors):
  """One string vector: each tensor serialised (tf.io.serialize_tensor)."""
  if not tensors:
    return tf.zeros([0], tf.string)
  return tf.stack([tf.io.serialize_tensor(t) for t in tensors])


def _deserialized(rows):
  """Per step, the numpy values of a [steps, tensors] array of
  _serialized rows."""
  def value(serialized):
    array = tf.make_ndarray(tensor_pb2.TensorProto.FromString(serialized))
    return array[()] if array.ndim == 0 else array  # Scalars as numpy's.

  return [[value(v) for v in row] for row in rows]


class _ListenersHook(tf.compat.v1.train.SessionRunHook):
  """Where Estimator's CheckpointSaverHook calls the saving listeners of a
  train() call when the session starts: begin() first of all hooks, then,
  after the variables are loaded, before_save / after_save of the step
  training starts from (when model_dir has a checkpoint: Estimator writes
  it again; otherwise the loop driver's first checkpoint is that save).
  listeners(): the current call's checkpoint_listeners.Listeners, or None."""

  def __init__(self, listeners, runner):
    self._listeners = listeners
    self._runner = runner

  def begin(self):
    if self._listeners() is not None:
      self._listeners().begin()

  def after_create_session(self, session, coord):
    del session, coord
    listeners = self._listeners()
    if listeners and self._runner.latest_checkpoint() is not None:
      step = self._runner.global_step()
      listeners.before_save(step)
      listeners.after_save(step)

  def end(self, session):
    del session
    if self._listeners() is not None:
      self._listeners().end(self._runner.global_step())
