"""The facade's one link to the tf2 runner: Estimator calls -> Tf2Runner.

What the facade's Estimator calls (the shape of the runner API being built):
  Backend(model).train(input_fn, *, to_step, hooks, listeners, save_steps,
                       save_secs) -> final global step
  Backend(model).evaluate(input_fn, *, steps, checkpoint_path, hooks, name)
                       -> {metric: np.float32, ..., 'global_step': np.int64}
  Backend(model).predict(input_fn, *, checkpoint_path, hooks,
                       yield_single_examples, predict_keys) -> iterator
  Backend(model).export(export_dir_base, serving_input_receiver_fn, *,
                       checkpoint_path) -> path (str)

How it drives today's Tf2Runner(params, model_fn, input_fn) (global_step(),
train(to_step), train_steps(n), save_checkpoint(), evaluate(steps),
predict(), export(dir)): one runner per call, given runner_fns.RunnerFns's
model_fn/input_fn (Estimator's arguments, EstimatorSpec -> TPUEstimatorSpec,
host-driven hooks) and a params dict holding only the keys the runner reads:
  seed <- RunConfig.tf_random_seed;  keep_checkpoint_max <- same name;
  jit_compile <- False: Estimator does not XLA-compile on CPU/GPU (string
      features, numerics as TF 2.15's); TPUStrategy compiles anyway;
  iterations_per_loop <- TPUConfig.iterations_per_loop (Estimator:
      log_step_count_steps, so its progress line comes as often);
  train/eval_batch_size <- TPUEstimator's global batches (0 for Estimator,
      whose input_fn batches itself); use_tpu/tpu <- TPUEstimator(use_tpu)
      and RunConfig.master / cluster (the runner then picks TPUStrategy;
      TF_CONFIG -> MultiWorkerMirrored; local devices otherwise);
  save_checkpoints_steps <- never: train() cuts training into runner.train()
      calls ending where Estimator's CheckpointSaverHook would save (steps
      after the last save; secs estimated in steps from the measured rate),
      and the runner saves at the end of each call;
  checkpoint_path -> a temporary model_dir whose `checkpoint` state names it.

What the facade needs from the runner that it does not offer yet. Each case
raises RunnerFeatureMissing (a NotImplementedError) naming the Estimator API:
  1. export(export_dir_base, serving_input_receiver_fn, *, checkpoint_path):
     a SavedModel of the PREDICT graph fed by the user's receiver fn (TF1
     placeholders), signatures from the spec's export_outputs;
  2. predict(..., yield_single_examples=False): whole batches;
  3. EstimatorSpec.eval_metric_ops, and Scaffold(saver / init_fn / init_op)
     (e.g. EMA evaluation) honoured in every mode;
  4. evaluate/predict without any checkpoint (Estimator: initialised
     variables); evaluate/predict hooks;
  5. RunConfig.train_distribute / eval_distribute other than the strategy
     the runner picks itself (Tf2Runner(..., strategy=));
  5b. a call after each training loop, for StepCounterHook and
     SummarySaverHook (today they raise UnsupportedHookError).
And what it emulates, which the runner should take over:
  6. evaluate/predict/export on a given checkpoint_path (today: a temporary
     model_dir naming it);
  7. train(input_fn, *, to_step, hooks): per-step tensor hooks (today:
     through host_call), saving by steps/secs with CheckpointSaverListeners
     (today: one runner.train() call per checkpoint), stopping cleanly at
     the end of the input (today: OutOfRangeError caught, the last partial
     loop's host_call values are lost, a warning says so);
  8. the progress line every log_step_count_steps (today: every loop), a
     batch-size-agnostic mode for Estimator (today: examples/sec 0), and
     Estimator's training summaries every save_summary_steps (loss,
     global_step/sec, the model_fn's tf.compat.v1.summary ops);
  9. eval events in model_dir/eval[_name] (today: written here);
 10. TF1 pruning: run only what the spec fetches (today graph_check refuses
     model_fns whose unfetched variable updates tf.function would run;
     drop that check once the runner prunes);
 11. the TPU as a ClusterResolver and TPUConfig.num_shards as the replica
     count (today: RunConfig.master as params['tpu']; num_shards unused).
"""

import contextlib
import dataclasses
import importlib
import os
import shutil
import tempfile
import time
from typing import Any, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from trainer.guard import nonfinite
from trainer.legacy import eval_events
from trainer.legacy import hooks as hooks_lib
from trainer.legacy import runner_fns
from trainer.legacy import session_config
from trainer.legacy import specs

ModeKeys = specs.ModeKeys
RunnerFeatureMissing = runner_fns.RunnerFeatureMissing
missing = runner_fns.missing
NEVER = 2**62  # A step the runner's own checkpoint cadence never reaches.


def _tf2_runner():
  """trainer.tf2.runner, imported at first use.

  The runner imports trainer.compat.estimator, which installs this facade:
  a module-level import would be a cycle. Entry points that use the facade
  (//trainer/legacy:legacy, its tests) depend on //trainer/tf2:runner.
  """
  return importlib.import_module('trainer.tf2.runner')


@dataclasses.dataclass
class Model:
  """What a facade Estimator is: its model_fn and configuration."""
  model_fn: Any
  params: dict
  config: Any  # trainer.legacy.run_config.RunConfig
  is_tpu: bool = False  # TPUEstimator (params get batch_size, use_tpu).
  use_tpu: bool = False
  train_batch_size: Optional[int] = None
  eval_batch_size: Optional[int] = None
  predict_batch_size: Optional[int] = None
  warm_start: Any = None  # runner_fns.WarmStart

  def batch_size(self, mode):
    """TPUEstimator's global batch for mode (None for Estimator)."""
    return {ModeKeys.TRAIN: self.train_batch_size,
            ModeKeys.EVAL: self.eval_batch_size,
            ModeKeys.PREDICT: self.predict_batch_size}[mode]

  @property
  def model_dir(self):
    return self.config.model_dir


def _check_cluster(config):
  if config.num_ps_replicas:
    raise NotImplementedError(
        'Parameter-server training (TF_CONFIG names "ps" tasks) is not '
        'supported by trainer.legacy: the tf2 runner trains with '
        'MultiWorkerMirroredStrategy; give TF_CONFIG "chief"/"worker" tasks '
        'only.')
  if config.device_fn is not None:
    raise NotImplementedError(
        'RunConfig(device_fn=...) is not supported by trainer.legacy: the '
        'tf.distribute strategy places variables and ops; drop device_fn.')
  for name in ('train_distribute', 'eval_distribute'):
    strategy = getattr(config, name)
    kind = type(strategy).__name__
    if 'ParameterServer' in kind or 'CentralStorage' in kind:
      raise NotImplementedError(
          f'RunConfig({name}={kind}) is not supported by trainer.legacy: '
          'parameter-server training has no tf2-runner equivalent; use '
          'MirroredStrategy or MultiWorkerMirroredStrategy.')


@contextlib.contextmanager
def _checkpoint_view(path):
  """A temporary directory whose `checkpoint` state names checkpoint `path`."""
  if not tf.io.gfile.exists(path + '.index'):
    raise ValueError(f'checkpoint_path {path}: no such checkpoint (no '
                     f'{path}.index).')
  if '://' not in path:
    path = os.path.abspath(path)
  view = tempfile.mkdtemp(prefix='legacy-checkpoint-')
  try:
    tf.compat.v1.train.update_checkpoint_state(
        view, path, all_model_checkpoint_paths=[path])
    yield view
  finally:
    shutil.rmtree(view, ignore_errors=True)


class Backend:
  """Runs one facade Estimator's train/evaluate/predict/export on Tf2Runner."""

  def __init__(self, model):
    self.model = model
    session_config.apply(model.config.session_config)

  # -- runner construction --------------------------------------------------

  def _tpu_address(self):
    config = self.model.config
    if not self.model.use_tpu:
      return ''
    if config.master:
      return config.master
    raise ValueError(
        'TPUEstimator(use_tpu=True): the RunConfig names no TPU (master is '
        'empty and no cluster resolver found one). Pass use_tpu=False to run '
        'on CPU/GPU, or run through `python -m trainer.legacy --cpu_fallback`.')

  def _params(self, mode, model_dir, train_steps):
    model, config = self.model, self.model.config
    tpu_config = getattr(config, 'tpu_config', None)
    if model.is_tpu and tpu_config is not None:
      loop = tpu_config.iterations_per_loop
    else:
      loop = config.log_step_count_steps or 100
    eval_mode = ModeKeys.EVAL if mode == ModeKeys.TRAIN else mode
    return {
        'seed': config.tf_random_seed, 'use_tpu': model.use_tpu,
        'tpu': self._tpu_address(), 'tpu_zone': None, 'gcp_project': None,
        'num_cpu_devices': 1, 'num_cores': getattr(tpu_config, 'num_shards',
                                                   None) or 1,
        'train_batch_size': model.train_batch_size or 0,
        'eval_batch_size': model.batch_size(eval_mode) or 0,
        'model_dir': model_dir,
        'keep_checkpoint_max': config.keep_checkpoint_max or 0,
        'iterations_per_loop': loop, 'save_checkpoints_steps': NEVER,
        'train_steps': train_steps,
        'log_step_count_steps': config.log_step_count_steps,
        # Estimator never XLA-compiles on CPU/GPU (TPUStrategy always does).
        'jit_compile': False,
    }

  def _runner(self, fns, mode, model_dir, train_steps=0):
    config = self.model.config
    _check_cluster(config)
    runner = _tf2_runner().Tf2Runner(
        self._params(mode, model_dir, train_steps), fns.model_fn, fns.input_fn)
    which = 'train_distribute' if mode == ModeKeys.TRAIN else 'eval_distribute'
    strategy = getattr(config, which)
    if strategy is not None:
      ours, theirs = runner.num_replicas, strategy.num_replicas_in_sync
      if ours != theirs:
        raise missing(
            f'RunConfig({which}={type(strategy).__name__} over {theirs} '
            'replica(s))', f'a strategy given by the caller (it picked '
            f'{runner.strategy_kind} over {ours} replica(s) itself)')
      logging.info('RunConfig.%s=%s: the tf2 runner uses its own %s strategy '
                   'over the same %d replica(s).', which,
                   type(strategy).__name__, runner.strategy_kind, ours)
    return runner

  # -- train ----------------------------------------------------------------

  def _next_save(self, step, last_save, save_steps, save_secs, rate, target):
    """Where the next runner.train() call ends (a checkpoint is written)."""
    if save_steps:
      return min(target, last_save + save_steps)
    if save_secs:
      loop = self._params(ModeKeys.TRAIN, '', 0)['iterations_per_loop']
      if rate is None:
        return min(target, step + loop)
      loops = max(1, int(rate * save_secs / loop))
      return min(target, step + loops * loop)
    return target

  def train(self, input_fn, *, to_step, hooks, listeners, save_steps,
            save_secs):
    """Trains from model_dir's latest checkpoint to global step `to_step`.

    to_step None: until the input ends. Saves when training starts (as
    Estimator's CheckpointSaverHook does), every save_steps steps or about
    every save_secs seconds, and at the end, calling listeners' after_save
    after each save; stops early if one returns True. hooks: those
    hooks_lib.is_tensor_hook accepts. Returns the final global step.
    """
    model = self.model
    fns = runner_fns.RunnerFns(model, input_fn, hooks)
    target = NEVER if to_step is None else to_step
    runner = self._runner(fns, ModeKeys.TRAIN, model.model_dir,
                          0 if to_step is None else to_step)
    saving = hooks_lib.SaveListeners(listeners)
    if not (save_steps or save_secs):
      logging.warning('RunConfig saves no checkpoints (save_checkpoints_steps '
                      'and _secs are None); the tf2 runner still writes one '
                      'at the end of train().')
    runner.train_steps(0)  # Builds; restores model_dir or initialises.
    step = runner.global_step()
    if fns.host_hooks:
      fns.host_hooks.begin()
    saving.begin()
    stop = False
    if save_steps or save_secs:
      runner.save_checkpoint()
      stop = saving.after_save(step)
    last_save, rate = step, None
    while step < target and not stop:
      end = self._next_save(step, last_save, save_steps, save_secs, rate,
                            target)
      start_time = time.monotonic()
      try:
        runner.train(end)
      except tf.errors.OutOfRangeError:
        runner.save_checkpoint()
        step = runner.global_step()
        logging.warning(
            'Input ended at step %d: saved a checkpoint and stopped. The tf2 '
            'runner lost the host_call values (and hook logs) of that last '
            'loop of fewer than iterations_per_loop steps.', step)
        saving.after_save(step)
        break
      except nonfinite.NonFiniteLossError as e:
        raise hooks_lib.NanLossDuringTrainingError() from e
      new_step = runner.global_step()
      rate = (new_step - step) / max(time.monotonic() - start_time, 1e-9)
      step = last_save = new_step
      stop = saving.after_save(step)
    if fns.host_hooks:
      fns.host_hooks.end()
    saving.end(step)
    return step

  # -- evaluate and predict -------------------------------------------------

  def _checkpoint(self, checkpoint_path, api):
    path = checkpoint_path or tf.train.latest_checkpoint(self.model.model_dir)
    if path is None:
      raise missing(f'{api} with no checkpoint in model_dir '
                    f'{self.model.model_dir}',
                    'running on freshly initialised variables')
    return path

  def evaluate(self, input_fn, *, steps, checkpoint_path, hooks, name):
    """Estimator.evaluate's dict; writes model_dir/eval[_name] events."""
    if hooks:
      raise missing(f'evaluate(hooks=[{type(hooks[0]).__name__}, ...])',
                    'hooks in evaluate()')
    path = self._checkpoint(checkpoint_path, 'evaluate()')
    with _checkpoint_view(path) as view:
      fns = runner_fns.RunnerFns(self.model, input_fn)
      metrics = self._runner(fns, ModeKeys.EVAL, view).evaluate(steps)
    step = np.int64(metrics.pop('global_step'))
    result = {k: np.float32(v) for k, v in metrics.items()}
    result['global_step'] = step
    eval_events.write(eval_events.eval_dir(self.model.model_dir, name),
                      result, step, path)
    return result

  def predict(self, input_fn, *, checkpoint_path, hooks,
              yield_single_examples, predict_keys):
    """Yields Estimator.predict's values: per example, keys filtered."""
    if hooks:
      raise missing(f'predict(hooks=[{type(hooks[0]).__name__}, ...])',
                    'hooks in predict()')
    if not yield_single_examples:
      raise missing('predict(yield_single_examples=False)',
                    'predict() yielding whole batches')
    path = self._checkpoint(checkpoint_path, 'predict()')
    with _checkpoint_view(path) as view:
      fns = runner_fns.RunnerFns(self.model, input_fn)
      runner = self._runner(fns, ModeKeys.PREDICT, view)
      for example in runner.predict():
        if not fns.predictions_are_dict:
          if predict_keys:
            raise ValueError('predict_keys argument is not valid in case of '
                             'non-dict predictions.')
          yield example['predictions']
          continue
        if predict_keys:
          kept = {k: v for k, v in example.items() if k in predict_keys}
          if not kept:
            raise ValueError(f'Expected to run at least one output from '
                             f'{list(example)}, provided {predict_keys}.')
          example = kept
        yield example

  def export(self, export_dir_base, serving_input_receiver_fn, *,
             checkpoint_path):
    """Path of a SavedModel fed by serving_input_receiver_fn (not yet)."""
    del export_dir_base, serving_input_receiver_fn
    self._checkpoint(checkpoint_path, 'export_saved_model()')
    raise missing(
        'export_saved_model(export_dir_base, serving_input_receiver_fn)',
        'export(export_dir_base, serving_input_receiver_fn, *, '
        'checkpoint_path): a SavedModel of the PREDICT graph fed by the '
        'caller\'s receiver fn')
