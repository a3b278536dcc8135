"""global_step/sec (StepCounterHook, TPUEstimator's examples/sec hook) as the
real Estimator writes it: the first trigger only records the step and time,
each later one logs the steps over the wall time since the last.

Each step sleeps STEP_SECS in the graph, so no honest rate exceeds
1 / STEP_SECS; a rate taken from hooks replayed after a loop, all within
microseconds, does (issue 17, point 8: 54504.7 logged where the Estimator
logged 16.5). In-process on the facade (graph engine, TF >= 2.16) and the
real Estimator (TF 2.15); through trainer.main, the tf2
runner against the estimator runner.
"""

import glob
import logging as std_logging
import os
import textwrap
import time
import types

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.api import specs
from trainer.facade import estimator as estimator_lib
from trainer.facade import run_config
from trainer.facade.tpu import tpu_config
from trainer.facade.tpu import tpu_estimator

v1 = tf.compat.v1
STEP_SECS = 0.03
MAX_RATE = 1.0 / STEP_SECS


def _api(which):
  if which == 'real':
    est, tpu = v1.estimator, v1.estimator.tpu
    return types.SimpleNamespace(
        Estimator=est.Estimator, RunConfig=est.RunConfig,
        TPUEstimator=tpu.TPUEstimator, TPURunConfig=tpu.RunConfig,
        TPUConfig=tpu.TPUConfig, EstimatorSpec=est.EstimatorSpec)
  return types.SimpleNamespace(
      Estimator=estimator_lib.Estimator, RunConfig=run_config.RunConfig,
      TPUEstimator=tpu_estimator.TPUEstimator,
      TPURunConfig=tpu_config.TPURunConfig, TPUConfig=tpu_config.TPUConfig,
      EstimatorSpec=specs.EstimatorSpec)


@pytest.fixture(params=[pytest.param('facade', marks=testutil.facade_lanes),
                        'real'])
def api(request):
  if request.param == 'real' and not testutil.HAS_ESTIMATOR:
    pytest.skip(f'TensorFlow {tf.__version__} has no real Estimator.')
  return _api(request.param)


def _model_fn(api):
  def model_fn(features, labels, mode, params):
    del params
    pause = v1.py_func(lambda: np.float32(time.sleep(STEP_SECS) or 0), [],
                       tf.float32)
    w = v1.get_variable('w', [4, 1])
    loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
    loss += 0. * pause
    train_op = v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, v1.train.get_global_step())
    return api.EstimatorSpec(mode, loss=loss, train_op=train_op)
  return model_fn


def _input_fn(params=None):
  del params
  x, y = np.ones((64, 4), np.float32), np.ones((64, 1), np.float32)
  return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(8)


class _Logged(std_logging.Handler):
  def __init__(self):
    super().__init__()
    self.rates = []

  def emit(self, record):
    message = record.getMessage()
    if message.startswith('global_step/sec: '):
      self.rates.append(float(message.split(': ')[1]))


def _train(estimator, steps, hooks=()):
  """Trains; (logged global_step/sec values, in order)."""
  logged = _Logged()
  logger = std_logging.getLogger('tensorflow')
  level = logger.level
  logger.addHandler(logged)
  logger.setLevel(std_logging.INFO)
  try:
    estimator.train(_input_fn, max_steps=steps, hooks=list(hooks))
  finally:
    logger.removeHandler(logged)
    logger.setLevel(level)
  return logged.rates


def _events(directory, suffix='/sec'):
  """{tag: [(step, value)]} of the rate summaries in directory's events,
  once every cached summary writer of this process is flushed and closed
  (a StepCounterHook's writer flushes only every 120 s or when closed, and
  neither Estimator closes it: its last event may still be queued)."""
  v1.summary.FileWriterCache.clear()
  found = {}
  for path in sorted(glob.glob(os.path.join(directory, 'events.*'))):
    for event in v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag.endswith(suffix):
          found.setdefault(value.tag, []).append(
              (event.step, value.simple_value))
  return found


def _check_rates(rates):
  assert rates, 'no rate'
  for rate in rates:
    assert 0 < rate <= MAX_RATE, rates


def test_estimator_step_counter(api, tmp_path):
  estimator = api.Estimator(_model_fn(api), config=api.RunConfig(
      model_dir=str(tmp_path), log_step_count_steps=5, tf_random_seed=1))
  logged = _train(estimator, 16)
  events = _events(str(tmp_path))
  # Step 1 records; 6, 11 and 16 log what the 5 steps before them took.
  assert [s for s, _ in events['global_step/sec']] == [6, 11, 16]
  assert logged == pytest.approx([r for _, r in events['global_step/sec']],
                                 rel=1e-5)  # Logged with %g.
  _check_rates(logged)


def test_tpu_estimator_examples_per_second(api, tmp_path):
  # Every ceil(64 / iterations_per_loop) = 7 steps, as on a TPU's loops.
  config = api.TPURunConfig(
      model_dir=str(tmp_path), log_step_count_steps=64, tf_random_seed=1,
      tpu_config=api.TPUConfig(iterations_per_loop=10))
  estimator = api.TPUEstimator(_model_fn(api), config=config, use_tpu=False,
                               train_batch_size=8)
  logged = _train(estimator, 16)
  events = _events(str(tmp_path))
  assert sorted(events) == ['examples/sec', 'global_step/sec']
  assert [s for s, _ in events['global_step/sec']] == [8, 15]
  assert [s for s, _ in events['examples/sec']] == [8, 15]
  assert [r * 8 for _, r in events['global_step/sec']] == pytest.approx(
      [r for _, r in events['examples/sec']])
  _check_rates(logged)
  assert len(logged) == 2


def test_users_step_counter_hook(api, tmp_path):
  estimator = api.Estimator(_model_fn(api), config=api.RunConfig(
      model_dir=str(tmp_path), log_step_count_steps=None, tf_random_seed=1))
  hook = v1.train.StepCounterHook(every_n_steps=4,
                                  output_dir=str(tmp_path / 'hook'))
  logged = _train(estimator, 13, hooks=[hook])
  events = _events(str(tmp_path / 'hook'))
  assert [s for s, _ in events['global_step/sec']] == [5, 9, 13]
  _check_rates(logged)
  assert not _events(str(tmp_path))  # No other counter.


SLOW_MODULE = textwrap.dedent('''
    import time
    import numpy as np
    import tensorflow.compat.v1 as tf
    from tensorflow.compat.v1 import estimator as tf_estimator

    def _pause():
      time.sleep(%r)
      return np.float32(0)

    def model_fn(features, labels, mode, params):
      x = tf.reshape(features["image"], [-1, 784])
      logits = tf.layers.dense(x, 10)
      loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
      pause = tf.numpy_function(_pause, [], tf.float32)
      loss += 0. * pause
      train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
          loss, tf.train.get_global_step())
      return tf_estimator.tpu.TPUEstimatorSpec(mode, loss=loss,
                                               train_op=train_op)
''' % STEP_SECS)


@pytest.mark.parametrize('runner', [
    pytest.param('estimator', marks=testutil.requires_estimator),
    'tf2',
])
def test_main_rates_with_loops_longer_than_the_log_cadence(tmp_path, runner):
  module = tmp_path / 'slow_model.py'
  module.write_text(SLOW_MODULE)
  model_dir = tmp_path / 'model'
  result = testutil.run_main([
      f'--model={module}:model_fn', '--input=tfrecord', f'--runner={runner}',
      '--mode=train', '--train_steps=20', '--iterations_per_loop=10',
      '--log_step_count_steps=5', f'--model_dir={model_dir}'])
  assert result.returncode == 0, result.stderr[-3000:]
  rates = [r for _, r in _events(str(model_dir)).get('global_step/sec', [])]
  _check_rates(rates)
