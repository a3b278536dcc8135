"""Builds the runner params['runner'] names and hands it to the controller."""

from absl import logging

from trainer import controller


def make_runner(params, model_fn, input_fn):
  """The runner params['runner'] names (estimator or tf2), logged."""
  # pylint: disable=g-import-not-at-top  (the estimator runner needs Estimator)
  if params['runner'] == 'tf2':
    from trainer.tf2 import runner as tf2_runner
    logging.info('Runner: tf2 (tf.distribute; --num_cpu_devices=%d).',
                 params.get('num_cpu_devices', 1))
    return tf2_runner.Tf2Runner(params, model_fn, input_fn)
  from trainer.estimator import runner as estimator_runner
  logging.info('Runner: estimator (TPUEstimator, use_tpu=%s).',
               params['use_tpu'])
  return estimator_runner.EstimatorRunner(params, model_fn, input_fn)


def run(params, model_fn, input_fn):
  """Runs params['mode'] with model_fn / input_fn; returns its result."""
  return controller.run(make_runner(params, model_fn, input_fn), params)
