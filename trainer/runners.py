"""Builds the runner for params and hands it to the controller."""

from absl import logging

from trainer import controller
from trainer import estimator_runner
from trainer import registry


def run(params):
  """Resolves --model / --input and runs params['mode']; returns its result."""
  model_fn = registry.resolve_model_fn(params['model'])
  input_fn = registry.resolve_input_fn(params['input'])
  logging.info('Runner: estimator (TPUEstimator, use_tpu=%s).',
               params['use_tpu'])
  runner = estimator_runner.EstimatorRunner(params, model_fn, input_fn)
  return controller.run(runner, params)
