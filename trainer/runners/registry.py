"""Builds the runner params['runner'] names and hands it to the controller."""

from absl import logging
import tensorflow as tf

from trainer import config
from trainer.guard import peers
from trainer.guard import preemption
from trainer.runtime import controller


# pylint: disable=g-import-not-at-top  (each runner imports what it needs)


def _native(params, model_fn, input_fn, serving_input_fn):
  """The TF2-native Keras version of the built-in params['model'] (not
  model_fn), trained with Orbit."""
  del model_fn, serving_input_fn
  from trainer.runners.native import runner as native_runner
  logging.info('Runner: native (Keras model, Orbit; --num_cpu_devices=%d).',
               params['num_cpu_devices'])
  return native_runner.NativeRunner(params, input_fn=input_fn)


def _tf2(params, model_fn, input_fn, serving_input_fn):
  """The model_fn under tf.distribute."""
  from trainer.runners.tf2 import runner as tf2_runner
  logging.info('Runner: tf2 (tf.distribute; --num_cpu_devices=%d).',
               params['num_cpu_devices'])
  return tf2_runner.Tf2Runner(params, model_fn, input_fn,
                              serving_input_fn=serving_input_fn)


def _estimator(params, model_fn, input_fn, serving_input_fn):
  """The model_fn under the real TPUEstimator (TF <= 2.15)."""
  from trainer.runners.estimator import runner as estimator_runner
  logging.info('Runner: estimator (TPUEstimator, use_tpu=%s).',
               params['use_tpu'])
  return estimator_runner.EstimatorRunner(params, model_fn, input_fn,
                                          serving_input_fn=serving_input_fn)


# The registry: --runner's name -> factory(params, model_fn, input_fn,
# serving_input_fn). A new runner is its own package and one entry here
# (its name in trainer/config.py's RUNNERS, which flags.py offers).
FACTORIES = {'estimator': _estimator, 'tf2': _tf2, 'native': _native}


def make_runner(params, model_fn, input_fn, serving_input_fn=None):
  """The runner params['runner'] names, logged.

  input_fn: one input_fn for every mode, or {'train', 'eval', 'infer': fn}.
  serving_input_fn: the serving_input_receiver_fn of --mode=export (None:
  the built-in signature on encoded images).
  """
  factory = FACTORIES.get(params['runner'])
  if factory is None:
    raise ValueError(f"--runner={params['runner']}: no such runner; "
                     f"choose one of {', '.join(FACTORIES)}.")
  return factory(params, model_fn, input_fn, serving_input_fn)


def run(params, model_fn, input_fn, serving_input_fn=None):
  """Runs params['mode'] with model_fn / input_fn; returns its result."""
  runner = make_runner(params, model_fn, input_fn, serving_input_fn)
  preemption.reclaim()  # Its strategy may have taken SIGTERM over.
  try:
    return controller.run(runner, params)
  except tf.errors.OpError as e:
    lost = peers.lost_worker_error(e, params['model_dir'])
    if lost is None:
      raise
    raise lost from e
