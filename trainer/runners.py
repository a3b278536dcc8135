"""Builds the runner for params and hands it to the controller."""

from absl import logging

from trainer import controller
from trainer import registry


def make_runner(params, model_fn, input_fn):
  """The runner params['runner'] names (default estimator), logged."""
  # pylint: disable=g-import-not-at-top  (estimator_runner needs tf.estimator)
  if params.get('runner', 'estimator') == 'tf2':
    from trainer.tf2 import runner as tf2_runner
    logging.info('Runner: tf2 (tf.distribute; --num_cpu_devices=%d).',
                 params.get('num_cpu_devices', 1))
    return tf2_runner.Tf2Runner(params, model_fn, input_fn)
  from trainer.estimator import runner as estimator_runner
  logging.info('Runner: estimator (TPUEstimator, use_tpu=%s).',
               params['use_tpu'])
  return estimator_runner.EstimatorRunner(params, model_fn, input_fn)


def run(params):
  """Resolves --model / --input and runs params['mode']; returns its result."""
  model_fn = registry.resolve_model_fn(params['model'])
  input_fn = registry.resolve_input_fn(params['input'])
  runner = make_runner(params, model_fn, input_fn)
  return controller.run(runner, params)
