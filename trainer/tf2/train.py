"""Training under the tf2 runner: TPUEstimator's loop with tf.distribute.

The model_fn's own train_op (its v1 optimizer, global_step, UPDATE_OPS)
drives training, its loss scaled by 1/replicas as Estimator and
CrossShardOptimizer do; a loop of up to iterations_per_loop steps is one
tf.function call (an explicit tf.while_loop), with the replica step
XLA-compiled where the strategy allows it. host_call runs on the host on the
tensors of every step gathered from all replicas, as TPUEstimator does.
Checkpoints, the progress line, non-finite checks and SIGTERM follow the
loop policy (trainer/loop.py).
"""

import contextlib

import numpy as np
import tensorflow as tf

from trainer.compat import estimator as estimator_compat
from trainer.compat import tf_private
from trainer.guard import nonfinite
from trainer.tf2 import host_graph
from trainer.tf2 import model_fn_adapter

_MEAN = tf.distribute.ReduceOp.MEAN


class Training:
  """The training loop of a Tf2Runner (its strategy, module, input)."""

  def __init__(self, runner, steps_per_loop, policy):
    self._runner = runner
    self._steps_per_loop = steps_per_loop
    self._policy = policy
    self._iterator = None
    self._loop = None
    self._host_call = None  # (fn, tensors) recorded while tracing.
    self._host_graph = None
    self._host_step = None

  def _replica_step(self, features, labels):
    spec = self._runner.call_model_fn(features, labels,
                                      estimator_compat.ModeKeys.TRAIN)
    if spec.train_op is None or spec.loss is None:
      raise ValueError('model_fn returned no train_op or no loss in TRAIN.')
    host_tensors = []
    if spec.host_call is not None:
      fn, tensors = spec.host_call
      host_tensors = tf.nest.flatten(tensors)
      self._host_call = (fn, tensors)
    with tf.control_dependencies([spec.train_op]):
      loss = tf.identity(spec.loss)
      host_tensors = [tf.identity(t) for t in host_tensors]
    return loss, host_tensors

  @contextlib.contextmanager
  def _scope(self):
    """Where a loop is traced and run: the runner's scopes, loss scaling."""
    with self._runner.scope(), tf_private.estimator_loss_scaling(
        self._runner.strategy):
      yield

  def _build(self):
    """Traces the step once (creating variables), then the loop function."""
    runner = self._runner
    strategy = runner.strategy
    self._iterator = iter(runner.dataset(estimator_compat.ModeKeys.TRAIN))
    step = model_fn_adapter.plain(self._replica_step)
    if runner.jit:
      step = tf.function(step, jit_compile=True, autograph=False)

    def run_step(iterator):
      return strategy.run(
          step, args=model_fn_adapter.features_labels(next(iterator)))

    with self._scope():
      tf.function(run_step, autograph=False).get_concrete_function(
          self._iterator)
    runner.after_build()
    host_dtypes = [t.dtype for t in tf.nest.flatten(self._host_call[1])
                   ] if self._host_call else []

    def train_loop(iterator, steps):
      def body(i, losses, host):
        loss, host_tensors = run_step(iterator)
        losses = losses.write(i, strategy.reduce(_MEAN, loss, axis=None))
        host = tuple(array.write(i, strategy.gather(t, axis=0))
                     for array, t in zip(host, host_tensors))
        return i + 1, losses, host

      _, losses, host = tf.while_loop(
          lambda i, *_: i < steps, body,
          (tf.constant(0), tf.TensorArray(tf.float32, size=steps),
           tuple(tf.TensorArray(d, size=steps) for d in host_dtypes)))
      return losses.stack(), tuple(array.stack() for array in host)

    self._loop = tf.function(train_loop, autograph=False)

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

  def steps(self, num_steps):
    """Runs `num_steps` steps in loops of <= steps_per_loop; their losses.

    No checkpoint, progress line or checks: `train` adds those.
    """
    if self._loop is None:
      self._build()
    losses = []
    done = 0
    while done < num_steps:
      n = min(self._steps_per_loop, num_steps - done)
      with self._scope():
        loop_losses, host_values = self._loop(self._iterator, tf.constant(n))
      self._run_host_calls([v.numpy() for v in host_values])
      losses.extend(loop_losses.numpy().tolist())
      done += n
    return np.array(losses, dtype=np.float32)

  def train(self, to_step):
    """Trains until global_step reaches `to_step`, as the policy says."""
    if self._loop is None:
      self._build()
    runner, policy = self._runner, self._policy
    step = runner.global_step()
    policy.begin(step, to_step)
    while step < to_step:
      losses = self.steps(policy.loop_steps(step))
      step = runner.global_step()
      decision = policy.after_loop(step, losses)
      if decision.save:
        policy.check_variables(nonfinite.finite_by_name(runner.variables()),
                               step)
        runner.checkpoints.save(step)
        policy.saved(step)
      if decision.stop:
        break
    if self._host_graph is not None:
      self._host_graph.flush()
