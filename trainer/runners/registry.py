"""The one runner registry: --runner's names, what each runner is, and how
it is built; trainer.main, trainer.verify_migration and the benches all
build their runners here.

A runner is its own package under trainer/runners/ and one `register` call
below. Every runner offers the interface of --mode's outer loop
(trainer/runtime/modes.py: train, evaluate, predict, export,
global_step, latest_checkpoint) and `observe_training(steps, compared)`,
which verify_migration compares.
"""

import dataclasses
from typing import Callable, Dict

from absl import flags
from absl import logging

from trainer import config as config_lib
from trainer.runtime import tf_config

# pylint: disable=g-import-not-at-top  (TensorFlow where a runner is made
# or run: --runner is checked, and --help answered, before it is imported)


@dataclasses.dataclass(frozen=True)
class Runner:
  """A runner, as --runner names it.

  make: (config, model_fn, input_fn, serving_input_fn, strategy) -> the
    runner (config: the run's trainer.config.Config); strategy None: the runner makes its own (the estimator runner
    has none: TPUEstimator on one device or a TPU).
  summary: what it runs, for the log line and --runner's help.
  needs_estimator: only where TensorFlow has tf.estimator (<= 2.15).
  object_checkpoints: reads object-based checkpoints (not TF1 name-based
    ones): a TF1 model_dir is converted first
    (trainer/runners/native/convert.py).
  """

  name: str
  make: Callable
  summary: str
  needs_estimator: bool = False
  object_checkpoints: bool = False


RUNNERS: Dict[str, Runner] = {}  # --runner name -> its entry.


def register(entry):
  """Adds `entry` to RUNNERS; ValueError if its name is taken."""
  if entry.name in RUNNERS:
    raise ValueError(f'runner {entry.name!r} is registered twice.')
  RUNNERS[entry.name] = entry
  return entry


def names():
  """The registered runners' names, in registration order."""
  return tuple(RUNNERS)


def get(name):
  """The entry of runner `name`; ValueError naming --runner otherwise."""
  if name not in RUNNERS:
    raise ValueError(f'--runner={name}: no such runner; choose one of '
                     f'{", ".join(RUNNERS)}.')
  return RUNNERS[name]


def add_flag_validator(flag_values=flags.FLAGS):
  """Checks --runner against the registry at parse time (an entry point
  calls it after defining the trainer's flags, flags.py)."""
  flags.register_validator(
      'runner', lambda name: name is None or name in RUNNERS,
      message=f'--runner must be one of {", ".join(RUNNERS)}.',
      flag_values=flag_values)


def make_runner(config, model_fn, input_fn, serving_input_fn=None,
                strategy=None):
  """The runner config.runner names (config: the run's
  trainer.config.Config), logged.

  input_fn: one input_fn for every mode, or {'train', 'eval', 'infer': fn}.
  serving_input_fn: the serving_input_receiver_fn of --mode=export (None:
  the built-in signature on encoded images, trainer/models/inputs.py).
  strategy: one the caller made (verify_migration shares one across runs),
  else the runner's own.
  """
  if not isinstance(config, config_lib.Config):
    raise TypeError(f'make_runner takes a trainer.config.Config, not '
                    f'{type(config).__name__}.')
  entry = get(config.runner)
  return entry.make(config, model_fn, input_fn, serving_input_fn, strategy)


def run(config, model_fn, input_fn, serving_input_fn=None):
  """Runs config.mode with model_fn / input_fn; returns its result."""
  import tensorflow as tf
  from trainer.guard import peers
  from trainer.guard import preemption
  from trainer.models import inputs
  from trainer.runtime import modes
  runner = make_runner(config, model_fn, input_fn, serving_input_fn)
  preemption.reclaim()  # Its strategy may have taken SIGTERM over.
  if config.runner == 'tf2' and tf_config.task_type() == 'evaluator':
    from trainer.engines.tf2 import parameter_servers
    return parameter_servers.evaluate_as_sidecar(runner, config)
  try:
    return modes.run(runner, config,
                     eval_steps=lambda: inputs.eval_steps(config))
  except tf.errors.OpError as e:
    lost = peers.lost_worker_error(e, config.model_dir)
    if lost is None:
      raise
    raise lost from e


# The runners. Each imports its package on first use.


def _make_estimator(config, model_fn, input_fn, serving_input_fn, strategy):
  del strategy  # TPUEstimator: one device (use_tpu=False) or the TPU.
  from trainer.runners.estimator import runner as estimator_runner
  logging.info('Runner: estimator (TPUEstimator, use_tpu=%s).',
               config.use_tpu)
  return estimator_runner.EstimatorRunner(config, model_fn, input_fn,
                                          serving_input_fn=serving_input_fn)


def _make_tf2(config, model_fn, input_fn, serving_input_fn, strategy):
  from trainer.engines.tf2 import parameter_servers
  from trainer.engines.tf2 import engine as tf2_engine
  logging.info('Runner: tf2 (tf.distribute; --num_cpu_devices=%d).',
               config.num_cpu_devices)
  role = parameter_servers.task_role()
  if role == 'server':  # A ps or worker of the coordinator's cluster.
    parameter_servers.serve()
  if role == 'coordinator':
    parameter_servers.check_coordinator_mode(config)
  if role == 'evaluator' and strategy is None:
    # The evaluator of a cluster evaluates on its own devices (sidecar).
    import tensorflow as tf
    strategy = (tf.distribute.get_strategy(), 'default')
  return tf2_engine.Tf2Engine(config, model_fn, input_fn,
                              serving_input_fn=serving_input_fn,
                              strategy=strategy)


def _make_native(config, model_fn, input_fn, serving_input_fn, strategy):
  """The TF2-native Keras version of the built-in config.model (not
  model_fn), trained with Orbit."""
  del model_fn, serving_input_fn
  tf_config.check_no_ps('native')
  from trainer.runners.native import runner as native_runner
  logging.info('Runner: native (Keras model, Orbit; --num_cpu_devices=%d).',
               config.num_cpu_devices)
  return native_runner.NativeRunner(
      config, None if strategy is None else strategy[0], input_fn=input_fn)


register(Runner(
    'estimator', _make_estimator,
    'the model_fn under the real TPUEstimator (TF <= 2.15)',
    needs_estimator=True))
register(Runner(
    'tf2', _make_tf2, 'the same model_fn under tf.distribute'))
register(Runner(
    'native', _make_native,
    'the TF2-native Keras version of a built-in model, trained with Orbit',
    object_checkpoints=True))
