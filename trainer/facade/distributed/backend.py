"""The facade's one link to the tf2 engine: Estimator calls -> Tf2Engine.

Each Estimator call builds one Tf2Engine (as Estimator builds one graph per
call), restoring model_dir's latest checkpoint, with estimator_fns.EstimatorFns's
model_fn / input_fn (Estimator's calling conventions) and these settings:
  seed <- RunConfig.tf_random_seed;  keep_checkpoint_max <- same name;
  save_checkpoints_steps / _secs <- same names (a CheckpointSaverHook in
      train(hooks=...) overrides them for the call, in the runner);
  save_summary_steps, log_step_count_steps <- same names;
  jit_compile <- off: Estimator does not XLA-compile on CPU/GPU (string
      features, numerics as TF 2.15's); TPUStrategy compiles anyway;
  iterations_per_loop <- TPUConfig.iterations_per_loop (Estimator:
      log_step_count_steps, so hooks and the progress line come as often);
  train/eval_batch_size <- TPUEstimator's global batch of the call's mode
      (0 for Estimator, whose input_fn batches itself);
  the strategy <- RunConfig.train_distribute / eval_distribute, else a
      TPUStrategy on RunConfig.cluster (use_tpu), else the runner's choice
      (the local devices: a TF_CONFIG cluster without a strategy trains on
      the graph engine, by between-graph replication, as Estimator).
Everything else (hooks, listeners, checkpoint cadence, the end of the
input, eval events, Scaffold, export signatures) is the engine's.
"""

import dataclasses
import logging as std_logging
from typing import Any, Optional

import numpy as np
import tensorflow as tf

from trainer import config as config_lib
from trainer.api import specs
from trainer.facade import run_config
from trainer.facade.distributed import estimator_fns
from trainer.facade.distributed import session_config
from trainer.facade.hooks import hooks as hooks_lib
from trainer.facade.tpu import util
from trainer.facade.tpu import validation
from trainer.guard import nonfinite
from trainer.guard import preemption
from trainer.engines.tf2 import engine as tf2_engine
from trainer.runtime import checkpoints
from trainer.runtime import strategy as strategy_lib

# A module logger, not absl's module functions: those call basicConfig()
# before the program's app.run, and TF's log lines then print twice.
logging = std_logging.getLogger(__name__)

_tpu_strategies = {}  # id(resolver) -> TPUStrategy, one per process.


@dataclasses.dataclass
class Model:
  """What a facade Estimator is: its model_fn and configuration."""
  model_fn: Any
  params: dict
  config: Any  # trainer.facade.run_config.RunConfig
  is_tpu: bool = False  # TPUEstimator (params get batch_size, use_tpu).
  use_tpu: bool = False
  train_batch_size: Optional[int] = None
  eval_batch_size: Optional[int] = None
  predict_batch_size: Optional[int] = None
  warm_start: Any = None  # WarmStartSettings or None.

  def batch_size(self, mode):
    """TPUEstimator's global batch for mode (None for Estimator)."""
    return {specs.ModeKeys.TRAIN: self.train_batch_size,
            specs.ModeKeys.EVAL: self.eval_batch_size,
            specs.ModeKeys.PREDICT: self.predict_batch_size}[mode]

  @property
  def model_dir(self):
    return self.config.model_dir


def _check_cluster(config, mode):
  """What the tf2 runner cannot run, refused before it starts, by name. A
  TF_CONFIG cluster with ps tasks, and train_distribute parameter-server
  strategies, train on the graph engine (estimator.py); they reach here
  only combined with a strategy the graph engine does not run."""
  if run_config.training_cluster(config)[1]:
    strategy = config.train_distribute if mode == ModeKeys.TRAIN else (
        config.eval_distribute)
    raise NotImplementedError(
        f'RunConfig({"train" if mode == ModeKeys.TRAIN else "eval"}_'
        f'distribute={type(strategy).__name__}) on a TF_CONFIG cluster with '
        '"ps" tasks is not supported by trainer.legacy: train there without '
        'a strategy (between-graph replication, variables on the ps tasks) '
        'or with tf.compat.v1.distribute.experimental.ParameterServerStrategy'
        '; evaluate without eval_distribute.')
  if config.device_fn is not None:
    raise NotImplementedError(
        'RunConfig(device_fn=...) is not supported by trainer.legacy: the '
        'tf.distribute strategy places variables and ops; drop device_fn.')
  for name in ('train_distribute', 'eval_distribute'):
    strategy = getattr(config, name)
    if strategy_lib.is_parameter_server(strategy):
      raise NotImplementedError(
          f'RunConfig({name}={type(strategy).__name__}) is not supported by '
          'trainer.legacy: parameter-server training has no tf2-runner '
          'equivalent; use MirroredStrategy or MultiWorkerMirroredStrategy.')


def _check_checkpoint(path):
  if path is not None and not tf.io.gfile.exists(path + '.index'):
    raise ValueError(f'checkpoint_path {path}: no such checkpoint (no '
                     f'{path}.index).')


class Backend:
  """Runs one facade Estimator's train / evaluate / predict on Tf2Engine, with
  the Engine interface's arguments (trainer/engines/engine.py); exports run
  on the graph engine."""

  def __init__(self, model):
    self.model = model
    session_config.apply(model.config.session_config)

  def _settings(self, mode, train_steps=None):
    """The engine's trainer.config.Config for one call in `mode` (the
    user's params dict reaches the model_fn apart, unchanged)."""
    model, config = self.model, self.model.config
    tpu_config = getattr(config, 'tpu_config', None)
    loop_secs = 0
    if model.is_tpu and tpu_config is not None:
      loop, unit = util.parse_iterations_per_loop(
          tpu_config.iterations_per_loop)
      if unit == 'seconds':  # TPUEstimator's loops of about `loop` seconds.
        loop_secs, loop = loop, config.log_step_count_steps or 100
    else:
      loop = config.log_step_count_steps or 100
    eval_mode = specs.ModeKeys.EVAL if mode == specs.ModeKeys.TRAIN else mode
    return config_lib.Config(
        runner='tf2', seed=config.tf_random_seed, jit_compile='off',
        # The launcher configures the peer heartbeat (--peer_timeout_secs).
        peer_timeout_secs=0,
        train_batch_size=model.train_batch_size or 0,
        eval_batch_size=model.batch_size(eval_mode) or 0,
        model_dir=model.model_dir,
        keep_checkpoint_max=config.keep_checkpoint_max or None,
        iterations_per_loop=loop, iterations_per_loop_secs=loop_secs,
        save_checkpoints_steps=config.save_checkpoints_steps,
        save_checkpoints_secs=config.save_checkpoints_secs,
        save_summary_steps=config.save_summary_steps,
        log_step_count_steps=config.log_step_count_steps,
        train_steps=train_steps or 0)

  def _strategy(self, mode):
    """(strategy, kind) from the RunConfig, or None for the runner's own."""
    config = self.model.config
    which = 'train_distribute' if mode == specs.ModeKeys.TRAIN else (
        'eval_distribute')
    strategy = getattr(config, which)
    if strategy is not None:
      return strategy, strategy_lib.strategy_kind(strategy)
    if self.model.use_tpu:
      resolver = self._tpu_resolver()
      if id(resolver) not in _tpu_strategies:
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        _tpu_strategies[id(resolver)] = tf.distribute.TPUStrategy(resolver)
      return _tpu_strategies[id(resolver)], 'tpu'
    return None

  def _tpu_resolver(self):
    resolver = getattr(self.model.config, 'cluster', None)
    if resolver is None:
      raise ValueError(
          'TPUEstimator(use_tpu=True): the RunConfig has no cluster (a '
          'TPUClusterResolver). Pass use_tpu=False to run on CPU/GPU, or '
          'run through `python -m trainer.legacy --cpu_fallback`.')
    return resolver

  def tpu_system(self):
    """The metadata (cores, hosts, cores per host) of the RunConfig's TPU,
    as TPUEstimator reads it before each call: a validation.TPUSystem."""
    return validation.TPUSystem.of(
        self._tpu_resolver().get_tpu_system_metadata())

  def _runner(self, mode, input_fn=None, train_steps=None):
    """A Tf2Engine for one call in `mode`, and its EstimatorFns."""
    config = self.model.config
    _check_cluster(config, mode)
    fns = estimator_fns.EstimatorFns(self.model, input_fn)
    runner = tf2_engine.Tf2Engine(
        self._settings(mode, train_steps), fns.model_fn,
        None if input_fn is None else fns.input_fn, model_params={},
        config=config, strategy=self._strategy(mode))
    fns.distributed = (runner.num_replicas > 1 or
                       runner.strategy_kind == 'tpu')
    return runner, fns

  def train(self, to_step=None, *, input_fn=None, hooks=(),
            saving_listeners=()):
    """Trains from model_dir's latest checkpoint to `to_step` (None: until a
    StopAtStepHook of `hooks` says, or the input ends), with the call's hooks
    and listeners; returns the loss of the last step trained (None if none
    was), which Estimator logs as 'Loss for final step'."""
    if to_step is None:
      start = checkpoints.latest_checkpoint_step(self.model.model_dir) or 0
      to_step = hooks_lib.stop_step(hooks, start)
    runner, _ = self._runner(specs.ModeKeys.TRAIN, input_fn, to_step)
    # Under a strategy TensorFlow may take SIGTERM over (multi-worker): the
    # runner stops at a loop's end with a checkpoint, every worker at the
    # same step, and the program exits 143 (130 for SIGINT).
    with preemption.handling_signals(
        self.model.model_dir if self.model.config.is_chief else None):
      try:
        loss = runner.train(to_step, hooks=hooks,
                            saving_listeners=saving_listeners)
      except nonfinite.NonFiniteLossError as e:
        raise hooks_lib.NanLossDuringTrainingError() from e
      if preemption.requested():
        logging.warning('%s Exiting with status %d.',
                        preemption.stopped_message(runner.global_step(),
                                                   self.model.model_dir),
                        preemption.exit_status())
        raise SystemExit(preemption.exit_status())
    return loss

  def evaluate(self, steps=None, *, input_fn=None, checkpoint_path=None,
               hooks=(), name=None):
    """Estimator.evaluate's dict (the runner writes model_dir/eval[_name])."""
    _check_checkpoint(checkpoint_path)
    runner, _ = self._runner(specs.ModeKeys.EVAL, input_fn)
    metrics = runner.evaluate(steps, checkpoint_path=checkpoint_path,
                              hooks=hooks, name=name)
    step = np.int64(metrics.pop('global_step'))
    # As a Session returns them: numpy values of the metric's dtype (bytes
    # for a string); a plain Python number becomes np.float32.
    result = {k: v if isinstance(v, (np.generic, np.ndarray, bytes))
              else np.float32(v) for k, v in metrics.items()}
    result['global_step'] = step  # (The runner logged 'Saving dict ...'.)
    return result

  def predict(self, *, input_fn=None, checkpoint_path=None, hooks=(),
              yield_single_examples=True, predict_keys=None):
    """Yields Estimator.predict's values: per example (or batch), keys
    filtered as Estimator filters them."""
    _check_checkpoint(checkpoint_path)
    runner, fns = self._runner(specs.ModeKeys.PREDICT, input_fn)
    for value in runner.predict(checkpoint_path=checkpoint_path, hooks=hooks,
                                yield_single_examples=yield_single_examples):
      if not fns.predictions_are_dict:
        if predict_keys:
          raise ValueError('predict_keys argument is not valid in case of '
                           'non-dict predictions.')
        yield value['predictions']
        continue
      if predict_keys:
        kept = {k: v for k, v in value.items() if k in predict_keys}
        if not kept:
          raise ValueError(f'Expected to run at least one output from '
                           f'{list(value)}, provided {predict_keys}.')
        value = kept
      yield value
