"""Runs a model_fn / input_fn pair under the real TPUEstimator.

On TPU (--tpu): TPUClusterResolver, TPUConfig with iterations_per_loop,
num_shards and PER_HOST_V2 input. Otherwise the same TPUEstimator with
use_tpu=False on the CPU. Training follows the loop policy
(trainer/runtime/loop.py) through the session hooks of
trainer/runners/estimator/loop_hooks.py, whose checkpoint saver replaces the one
RunConfig would add. Every restore TPUEstimator makes (train, evaluate,
predict, export) is refused first when the checkpoint does not fit the
model (trainer/guard/checkpoint_fit.py).
"""

import contextlib
import os

import tensorflow as tf

from model_fn import layers
from trainer.api import model_fns
from trainer.compat import op_seeds
from trainer.guard import checkpoint_fit
from trainer.guard import session_hooks
from trainer.models import inputs
from trainer.runners.estimator import loop_hooks as hooks
from trainer.runtime import checkpoints
from trainer.runtime import loop
from trainer.runtime import modes
from trainer.runtime import profiling
from trainer.runtime import tpu_cluster

_tpu = tf.compat.v1.estimator.tpu


def with_derived_op_seeds(model_fn):
  """model_fn whose random ops get the seeds the tf2 runner gives them
  (trainer/compat/op_seeds.py), so both runners draw the same numbers."""

  def seeded_model_fn(features, labels, mode, params, config):
    with op_seeds.derived_op_seeds():
      return model_fns.call_model_fn(model_fn, features, labels, mode,
                                     params, config)

  return seeded_model_fn


def checked_before_training(model_fn):
  """model_fn whose TRAIN graph is checked against model_dir's latest
  checkpoint as soon as it is built: Estimator's summary hooks open an
  events file there before the session restores (where checking_restores
  checks every mode)."""

  def checked_model_fn(features, labels, mode, params, config):
    spec = model_fn(features, labels, mode, params, config)
    if mode == tf.estimator.ModeKeys.TRAIN:
      checkpoint_fit.check_saver(
          None, tf.train.latest_checkpoint(config.model_dir))
    return spec

  return checked_model_fn


class _StepRecorder(tf.compat.v1.train.SessionRunHook):
  """Records the loss and the selected variables after every step."""

  def __init__(self, compared):
    self._compared = compared
    self.losses, self.weights = [], []

  def begin(self):
    v1 = tf.compat.v1
    self._loss = v1.get_collection(v1.GraphKeys.LOSSES)[-1]
    self._vars = {layers.variable_name(v): v for v in v1.global_variables()
                  if self._compared(layers.variable_name(v), v)}

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    self.losses.append(float(run_values.results))
    self.weights.append(run_context.session.run(self._vars))


@contextlib.contextmanager
def _no_partial_export(export_dir):
  """A failed export leaves nothing: not the temp-TIMESTAMP directory
  Estimator builds it in (and leaves behind), nor export_dir if it made
  it."""
  existed = tf.io.gfile.isdir(export_dir)
  before = set(tf.io.gfile.listdir(export_dir)) if existed else set()
  try:
    yield
  except BaseException:
    if tf.io.gfile.isdir(export_dir):
      for name in set(tf.io.gfile.listdir(export_dir)) - before:
        if name.rstrip('/').startswith('temp-'):
          tf.io.gfile.rmtree(os.path.join(export_dir, name))
      if not existed and not tf.io.gfile.listdir(export_dir):
        tf.io.gfile.rmtree(export_dir)
    raise


class EstimatorRunner:
  """train / evaluate / predict / export through one TPUEstimator."""

  def __init__(self, config, model_fn, input_fn, serving_input_fn=None):
    """config: the run's trainer.config.Config; TPUEstimator's params (the
    model_fn's and input_fn's) are its params dict."""
    self._config = config
    self._input_fns = (dict(input_fn) if isinstance(input_fn, dict) else
                       {mode: input_fn for mode in ('train', 'eval', 'infer')})
    self._serving_input_fn = serving_input_fn
    resolver = tpu_cluster.resolve_tpu(config.cluster)
    run_config = _tpu.RunConfig(
        cluster=resolver,
        model_dir=config.model_dir,
        tf_random_seed=config.seed,
        save_checkpoints_steps=None,  # hooks.CheckpointSaverHook saves.
        save_checkpoints_secs=None,
        keep_checkpoint_max=config.keep_checkpoint_max,
        save_summary_steps=config.save_summary_steps,
        log_step_count_steps=config.log_step_count_steps,
        tpu_config=_tpu.TPUConfig(
            iterations_per_loop=(f'{config.iterations_per_loop_secs}s'
                                 if config.iterations_per_loop_secs else
                                 config.iterations_per_loop),
            num_shards=config.num_cores,
            per_host_input_for_training=_tpu.InputPipelineConfig.PER_HOST_V2))
    self.estimator = _tpu.TPUEstimator(
        model_fn=checked_before_training(with_derived_op_seeds(model_fn)),
        config=run_config,
        use_tpu=config.use_tpu,
        train_batch_size=config.train_batch_size,
        eval_batch_size=config.eval_batch_size,
        predict_batch_size=config.eval_batch_size,
        params=config.as_params(),
        export_to_tpu=False)
    self._policy = loop.policy_for(config)
    self._profile = profiling.StepWindow(config.model_dir,
                                         config.profile_steps)

  def input_fn(self, mode):
    """The input_fn TPUEstimator is given for `mode` (params["mode"] set,
    random ops seeded as under the tf2 runner)."""
    input_fn = modes.input_fn_for_mode(self._input_fns[mode], mode)

    def seeded_input_fn(params):  # Named `params`, as TPUEstimator wants.
      with op_seeds.input_fn_op_seeds():
        return input_fn(params)

    return seeded_input_fn

  def global_step(self):
    return checkpoints.latest_checkpoint_step(self._config.model_dir) or 0

  def latest_checkpoint(self):
    return tf.train.latest_checkpoint(self._config.model_dir)

  def train(self, to_step):
    policy = self._policy
    with checkpoint_fit.checking_restores():
      self.estimator.train(
          self.input_fn('train'), max_steps=to_step,
          hooks=[hooks.LoopPolicyHook(policy, to_step),  # Before the saver.
                 hooks.CheckpointSaverHook(
                     policy, self._config.model_dir,
                     listeners=[hooks.FiniteVariablesListener(policy)]),
                 hooks.ProfilerHook(self._profile, self._steps_per_run())])

  def observe_training(self, steps, compared):
    """Trains to global step `steps`; (each step's loss, after each step
    {TF1 name: value} of the variables `compared(name, variable)` selects).
    """
    recorder = _StepRecorder(compared)
    with checkpoint_fit.checking_restores():
      self.estimator.train(self.input_fn('train'), max_steps=steps,
                           hooks=[recorder])
    return recorder.losses, recorder.weights

  def _steps_per_run(self):
    """Steps one session.run of TPUEstimator.train runs."""
    return self._config.iterations_per_loop if self._config.use_tpu else 1

  def evaluate(self, steps):
    with checkpoint_fit.checking_restores():
      return self.estimator.evaluate(
          self.input_fn('eval'), steps=steps,
          hooks=[session_hooks.AbortOnSignalHook(self._config.model_dir)])

  def predict(self):
    with checkpoint_fit.checking_restores():
      yield from self.estimator.predict(self.input_fn('infer'),
                                        yield_single_examples=True)

  def export(self, export_dir):
    with checkpoint_fit.checking_restores(), _no_partial_export(export_dir):
      path = self.estimator.export_saved_model(
          export_dir, self._serving_input_fn or
          inputs.serving_input_receiver_fn(self._config.as_params()))
    return path.decode() if isinstance(path, bytes) else path
