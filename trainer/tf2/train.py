"""Training under the tf2 runner: TPUEstimator's loop with tf.distribute.

The model_fn's own train_op (its v1 optimizer, global_step, UPDATE_OPS)
drives training, its loss scaled by 1/replicas as Estimator and
CrossShardOptimizer do; a loop of up to iterations_per_loop steps is one
tf.function call (an explicit tf.while_loop), with the replica step
XLA-compiled when chosen (strategy.choose_jit). Each train() call runs the
input_fn anew, as Estimator does. After each loop, on the host:
  * host_call runs on the tensors of every step gathered from all replicas,
    as TPUEstimator does (host_graph.py); reads of the global step in the
    model_fn give the step's value before its update, as in TF1, so
    summaries land at TPUEstimator's steps;
  * SessionRunHooks (the call's, the spec's training_hooks and Estimator's
    own loss / global_step/sec summary hooks) see each step's fetches
    (hooks.py), from the first replica;
  * checkpoints, the progress line, non-finite checks and SIGTERM follow the
    loop policy (trainer/loop.py); a hook's request_stop() ends training
    after the loop.
"""

import contextlib

import numpy as np
import tensorflow as tf

from trainer.compat import estimator as estimator_compat
from trainer.compat import tf_private
from trainer.guard import nonfinite
from trainer.tf2 import hooks as hooks_lib
from trainer.tf2 import host_graph
from trainer.tf2 import model_fn_adapter
from trainer.tf2 import summaries

_MEAN = tf.distribute.ReduceOp.MEAN
_TRAIN = estimator_compat.ModeKeys.TRAIN


class Training:
  """The training loop of a Tf2Runner (its strategy, module, input)."""

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
    self._hooks = None  # hooks.HookRunner of the last trace.
    self._call_hooks = ()
    self._hook_steps = None  # Steps per loop user hooks impose, if any.

  def _replica_step(self, features, labels):
    runner = self._runner
    spec = runner.call_model_fn(features, labels, _TRAIN)
    if spec.train_op is None or spec.loss is None:
      raise ValueError('model_fn returned no train_op or no loss in TRAIN.')
    self._spec = spec
    host_tensors = []
    if spec.host_call is not None:
      fn, tensors = spec.host_call
      host_tensors = tf.nest.flatten(tensors)
      self._host_call = (fn, tensors)
    hook_tensors = self._trace_hooks(spec)
    with tf.control_dependencies([spec.train_op]):
      loss = tf.identity(spec.loss)
      host_tensors = [tf.identity(t) for t in host_tensors]
      hook_tensors = [tf.identity(t) for t in hook_tensors]
    return loss, host_tensors, hook_tensors

  def _trace_hooks(self, spec):
    """Traces the hooks of this step (Estimator's, the spec's, the call's)
    on the process's first replica (the first to get here in this trace), in
    the model_fn's collections at the graph's root; their fetches
    (placeholders on the other replicas)."""
    if self._hooks is not None and self._hooks.traced_in_current_graph():
      return hooks_lib.placeholders_like(self._hooks.traced_tensors)
    runner = self._runner
    params = runner._params  # pylint: disable=protected-access
    graph = tf.compat.v1.get_default_graph()
    with runner.module.in_call_collections(), graph.name_scope(None):
      default_hooks = summaries.training_hooks(
          spec.loss, runner.model_dir, params.get('save_summary_steps', 100),
          params.get('log_step_count_steps', 100),
          compiled=runner.jit or runner.strategy_kind == 'tpu')
      user_hooks = list(spec.hooks) + list(self._call_hooks)
      hook_runner = hooks_lib.HookRunner(default_hooks + user_hooks)
      tensors = hook_runner.trace()
    self._hooks = hook_runner
    # Estimator runs hooks after every session.run: one step on CPU and
    # GPU, one loop on TPU. A user hook may stop training at any of them.
    self._hook_steps = None if (
        not user_hooks or runner.strategy_kind == 'tpu') else 1
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
    self._iterator = iter(runner.dataset(_TRAIN, input_fn))
    step = model_fn_adapter.plain(self._replica_step)
    if runner.jit:
      step = tf.function(step, jit_compile=True, autograph=False)

    def run_step(iterator):
      return strategy.run(
          step, args=model_fn_adapter.features_labels(next(iterator)))

    with self._scope():
      tf.function(run_step, autograph=False).get_concrete_function(
          self._iterator)
    runner.load(self._spec)
    runner.stale = False
    host_dtypes = [t.dtype for t in tf.nest.flatten(self._host_call[1])
                   ] if self._host_call else []
    hook_dtypes = [t.dtype for t in self._hooks.traced_tensors]

    def train_loop(iterator, steps):
      def body(i, losses, host, hooked):
        loss, host_tensors, hook_tensors = run_step(iterator)
        losses = losses.write(i, strategy.reduce(_MEAN, loss, axis=None))
        host = tuple(array.write(i, strategy.gather(t, axis=0))
                     for array, t in zip(host, host_tensors))
        hooked = tuple(  # The first replica's; see _trace_hooks.
            array.write(i, strategy.experimental_local_results(t)[0])
            for array, t in zip(hooked, hook_tensors))
        return i + 1, losses, host, hooked

      _, losses, host, hooked = tf.while_loop(
          lambda i, *_: i < steps, body,
          (tf.constant(0), tf.TensorArray(tf.float32, size=steps),
           tuple(tf.TensorArray(d, size=steps) for d in host_dtypes),
           tuple(tf.TensorArray(d, size=steps) for d in hook_dtypes)))
      return (losses.stack(), tuple(a.stack() for a in host),
              tuple(a.stack() for a in hooked))

    self._loop = tf.function(train_loop, autograph=False)
    with self._scope():  # Traced now, so the hooks see the loop's graph.
      self._loop.get_concrete_function(self._iterator, tf.constant(1))

  def _ensure_built(self, input_fn, hooks):
    """Builds the loop for this input_fn and these hooks, or starts a new
    pass of the input (Estimator calls the input_fn on every train())."""
    runner = self._runner
    if self._loop is None or self._built_for != (input_fn, tuple(hooks)):
      self._call_hooks = tuple(hooks)
      self._build(input_fn)
      self._built_for = (input_fn, tuple(hooks))
    else:
      self._iterator = iter(runner.dataset(_TRAIN, input_fn))
      if self._hooks:  # Fresh hook state, as in a new Estimator.train().
        self._hooks.restart()
      if runner.stale:  # An evaluation loaded other weights: come back.
        runner.checkpoints.restore(runner.latest_checkpoint())
        runner.stale = False

  def _run_host_calls(self, host_values):
    if not self._host_call or not host_values:
      return
    fn, tensors = self._host_call
    if self._host_graph is None:
      specs = tf.nest.pack_sequence_as(
          tensors, [host_graph.spec_of(v[0]) for v in host_values])
      self._host_graph = host_graph.HostGraph(fn, specs)
      self._host_step = self._host_graph.callable_for(
          self._host_graph.outputs)
    for i in range(host_values[0].shape[0]):
      self._host_step(*[v[i] for v in host_values])

  def _run_loop(self, num_steps):
    """One loop of `num_steps` steps; (losses, whether a hook asked to
    stop)."""
    first_step = self._runner.global_step()
    with self._scope():
      losses, host_values, hook_values = self._loop(self._iterator,
                                                    tf.constant(num_steps))
    self._run_host_calls([v.numpy() for v in host_values])
    stop = False
    if self._hooks:
      per_step = [[v[i] for v in (x.numpy() for x in hook_values)]
                  for i in range(num_steps)] if hook_values else (
                      [[]] * num_steps)
      stop = self._hooks.after_steps(per_step, first_step,
                                     self._runner.global_step)
    return losses.numpy(), stop

  def steps(self, num_steps, input_fn):
    """Runs `num_steps` steps in loops of <= steps_per_loop; their losses.

    No checkpoint, progress line, checks or hooks' stop: `train` adds those.
    """
    if self._loop is None:
      self._ensure_built(input_fn, ())
    losses = []
    done = 0
    while done < num_steps:
      n = min(self._steps_per_loop, num_steps - done)
      loop_losses, _ = self._run_loop(n)
      losses.extend(loop_losses.tolist())
      done += n
    return np.array(losses, dtype=np.float32)

  def _save(self, step):
    """A checkpoint at `step`, after the policy's check of the variables."""
    runner, policy = self._runner, self._policy
    policy.check_variables(nonfinite.finite_by_name(runner.variables()), step)
    runner.checkpoints.save(step)
    policy.saved(step)

  def train(self, to_step, input_fn, hooks=()):
    """Trains until global_step reaches `to_step`, as the policy says."""
    self._ensure_built(input_fn, hooks)
    runner, policy = self._runner, self._policy
    step = runner.global_step()
    policy.begin(step, to_step)
    if policy.should_save_at_start(runner.latest_checkpoint() is not None):
      self._save(step)
    if self._hooks:
      self._hooks.after_create_session(runner.global_step)
    while step < to_step:
      losses, stop = self._run_loop(
          min(policy.loop_steps(step), self._hook_steps or to_step))
      step = runner.global_step()
      if stop:
        policy.request_stop()
      decision = policy.after_loop(step, losses)
      if decision.save:
        self._save(step)
      if decision.stop:
        break
    if self._hooks:
      self._hooks.end(runner.global_step)
    if self._host_graph is not None:
      self._host_graph.flush()
