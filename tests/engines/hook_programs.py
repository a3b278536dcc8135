"""Model_fns and SessionRunHooks written as Estimator-era code writes them,
for the tests of hooks under both runners (tf2_hooks_test,
tf2_hook_replicas_test)."""

import tensorflow as tf

v1 = tf.compat.v1


class RecordingHook(v1.train.SessionRunHook):
  """Records (global_step, loss) after every run, as user hooks do."""

  def __init__(self, loss):
    self._loss = loss
    self.seen = []

  def begin(self):
    self._step = v1.train.get_global_step()

  def before_run(self, run_context):
    return v1.train.SessionRunArgs({'loss': self._loss, 'step': self._step})

  def after_run(self, run_context, run_values):
    self.seen.append((int(run_values.results['step']),
                      float(run_values.results['loss'])))


class StopAfterHook(v1.train.SessionRunHook):
  """Asks to stop in the after_run of the step that read global step
  `last`, as hooks with their own stopping rule do."""

  def __init__(self, last):
    self._last = last
    self.after_runs = 0

  def begin(self):
    self._step = v1.train.get_global_step()

  def before_run(self, run_context):
    return v1.train.SessionRunArgs(self._step)

  def after_run(self, run_context, run_values):
    self.after_runs += 1
    if int(run_values.results) >= self._last:
      run_context.request_stop()


def model_fn(make_hooks=None, scaffold=None):
  def model_fn(features, labels, mode, params):
    logits = v1.layers.dense(features / 255.0, 10)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=v1.train.get_global_step())
    hooks = make_hooks(loss, logits) if make_hooks else []
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, training_hooks=hooks,
        scaffold=scaffold() if scaffold else None)
  return model_fn


def count_loops(runner):
  """The num_steps of every loop the runner's training runs from now on."""
  loops = []
  training = runner._training  # pylint: disable=protected-access
  run_loop = training._run_loop  # pylint: disable=protected-access
  training._run_loop = lambda n: loops.append(n) or run_loop(n)  # pylint: disable=protected-access
  return loops
