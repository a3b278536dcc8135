"""What a Session-driven evaluate()/predict() does, kept by the tf2 runner.

Each test runs the same program on the real Estimator (TF 2.15 lane) and,
on the facade's lanes (TF >= 2.16), on the facade's graph engine and on its
tf2 runner (the TPU / multi-replica path, asked for here on one CPU
replica), and asserts what Estimator does: a hook's
request_stop() ends evaluate() and predict() after the batch that asked,
predictions of different batch lengths are refused, metric values keep
their dtype.
"""

import contextlib
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.api import specs
from trainer.facade import estimator as estimator_lib
from trainer.facade import run_config

v1 = tf.compat.v1
ModeKeys = specs.ModeKeys
ENGINES = [pytest.param('real', marks=testutil.requires_estimator),
           pytest.param('graph', marks=testutil.facade_lanes),
           pytest.param('tf2', marks=testutil.facade_lanes)]


class StopAfterFirst(v1.train.SessionRunHook):

  def after_run(self, run_context, run_values):
    run_context.request_stop()


def _model_fn(features, labels, mode, params):
  del labels
  spec = params['spec']
  p = v1.layers.dense(features['x'], 1, name='d',
                      kernel_initializer=v1.ones_initializer())
  if mode == ModeKeys.PREDICT:
    predictions = {'p': p}
    if features.get('odd') is not None:
      predictions['odd'] = features['odd']
    return spec(mode, predictions=predictions)
  loss = tf.reduce_mean(p)
  return spec(mode, loss=loss, eval_metric_ops={
      'n': v1.metrics.mean(tf.ones_like(p)),
      'as_float64': (tf.constant(0.5, tf.float64), tf.no_op())})


def _estimator(engine, tmp_path, model_fn=_model_fn, params=None,
               **config):
  """model_fn's Estimator on `engine`: the real one, or the facade's on its
  graph engine or its tf2 runner; params['spec'] is that API's
  EstimatorSpec."""
  real = engine == 'real'
  params = params if params is not None else {}
  params['spec'] = tf.estimator.EstimatorSpec if real else specs.EstimatorSpec
  estimator_cls = tf.estimator.Estimator if real else estimator_lib.Estimator
  config_cls = tf.estimator.RunConfig if real else run_config.RunConfig
  est = estimator_cls(model_fn, model_dir=str(tmp_path), params=params,
                      config=config_cls(**config))
  if engine == 'tf2':
    est._needs_tf2 = lambda mode: True  # pylint: disable=protected-access
  return est


def _training_model_fn(lr=0.01, scaffold=None, initializer=None):
  """A one-layer model_fn for train(); `lr` may be a callable making it."""

  def model_fn(features, labels, mode, params):
    del labels
    loss = tf.reduce_mean(v1.layers.dense(
        features['x'], 1, name='d', kernel_initializer=initializer))
    v1.add_to_collection('my_loss', loss)
    rate = lr() if callable(lr) else lr
    train_op = v1.train.GradientDescentOptimizer(rate).minimize(
        loss, v1.train.get_global_step())
    return params['spec'](mode, loss=loss, train_op=train_op,
                          scaffold=scaffold() if scaffold else None)

  return model_fn


def _input_fn(odd=False):
  x = np.arange(8, dtype=np.float32).reshape(4, 2)
  features = {'x': x}
  if odd:
    features['odd'] = np.zeros([4, 3], np.float32)
  return lambda: tf.data.Dataset.from_tensor_slices(features).batch(2).map(
      lambda f: dict(f, odd=f['odd'][:1]) if odd else f)


@pytest.mark.parametrize('engine', ENGINES)
def test_request_stop_ends_evaluate_and_predict_after_the_batch(
    engine, tmp_path):
  est = _estimator(engine, tmp_path)
  results = est.evaluate(_input_fn(), hooks=[StopAfterFirst()])
  assert float(results['n']) == 1.0
  assert float(results['loss']) == pytest.approx(3.0)  # Batch 1: p = 1, 5.
  assert isinstance(results['as_float64'], np.float64)
  predictions = [float(r['p'][0]) for r in est.predict(
      _input_fn(), hooks=[StopAfterFirst()])]
  assert predictions == [1.0, 5.0]


@pytest.mark.parametrize('engine', ENGINES)
def test_predictions_of_different_batch_lengths_are_refused(engine, tmp_path):
  est = _estimator(engine, tmp_path)
  est.evaluate(_input_fn(), steps=1)  # Initialises a model to predict with.
  with pytest.raises(ValueError, match='Batch length of predictions'):
    list(est.predict(_input_fn(odd=True)))


class AttrDict(dict):
  """params as HParams-like codebases pass them (ELECTRA, ALBERT)."""

  def __getattr__(self, name):
    try:
      return self[name]
    except KeyError:
      raise AttributeError(name) from None


@pytest.mark.parametrize('engine', ENGINES)
def test_params_keep_their_type(engine, tmp_path):
  seen = []

  def model_fn(features, labels, mode, params):
    seen.append((type(params).__name__, params.scale))
    return _model_fn(features, labels, mode, params)

  est = _estimator(engine, tmp_path, model_fn, params=AttrDict(scale=2))
  est.evaluate(_input_fn(), steps=1)
  assert seen and set(seen) == {('AttrDict', 2)}


@pytest.mark.parametrize('engine', ENGINES)
def test_a_scaffold_saver_decides_how_many_checkpoints_stay(engine, tmp_path):
  """Estimator's CheckpointSaverHook saves with the Scaffold's Saver: its
  max_to_keep, not RunConfig.keep_checkpoint_max."""

  est = _estimator(
      engine, tmp_path, _training_model_fn(scaffold=lambda: v1.train.Scaffold(
          saver=v1.train.Saver(max_to_keep=1))),
      save_checkpoints_steps=1, keep_checkpoint_max=3)
  est.train(lambda: _input_fn()().repeat(), steps=3)
  kept = tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths
  assert [os.path.basename(p) for p in kept] == ['model.ckpt-3']


class LookupHook(v1.train.SessionRunHook):
  """Looks its fetches up in before_run, by name and by collection."""

  def __init__(self):
    self.seen = []

  def before_run(self, run_context):
    graph = v1.get_default_graph()
    return v1.train.SessionRunArgs(
        (graph.get_tensor_by_name('lr:0'), v1.get_collection('my_loss')[0]))

  def after_run(self, run_context, run_values):
    self.seen.append(float(run_values.results[0]))


@pytest.mark.parametrize('engine', ENGINES)
def test_hooks_look_tensors_up_in_before_run_on_every_step(engine, tmp_path):
  est = _estimator(engine, tmp_path, _training_model_fn(
      lr=lambda: tf.identity(0.25, name='lr')))
  hook = LookupHook()
  est.train(lambda: _input_fn()().repeat(), steps=3, hooks=[hook])
  assert hook.seen == [0.25, 0.25, 0.25]


def test_a_tf1_strategy_predicts_on_the_tf2_runner(tmp_path):
  """tf.compat.v1.distribute strategies have no gather(): predictions are
  the local replicas' concatenated."""
  est = _estimator('tf2', tmp_path,
                   eval_distribute=v1.distribute.OneDeviceStrategy('/cpu:0'))
  assert [float(r['p'][0]) for r in est.predict(_input_fn())] == [
      1.0, 5.0, 9.0, 13.0]


@pytest.mark.parametrize('engine', ENGINES)
def test_train_logs_checkpoints_and_the_loss_of_the_final_step(engine, tmp_path):
  import logging  # pylint: disable=g-import-not-at-top
  est = _estimator(engine, tmp_path, _training_model_fn(
      lr=0.0, initializer=v1.ones_initializer()))
  lines = []
  handler = logging.Handler()
  handler.emit = lambda record: lines.append(record.getMessage())
  logger = logging.getLogger('tensorflow')
  logger.addHandler(handler)
  level = logger.level
  logger.setLevel(logging.INFO)
  try:
    est.train(lambda: _input_fn()().repeat(), steps=2)  # Batch 2: p 9, 13.
  finally:
    logger.removeHandler(handler)
    logger.setLevel(level)
  assert [l for l in lines if l.startswith('Loss for final step')] == [
      'Loss for final step: 11.0.']
  assert f'Saving checkpoints for 2 into {tmp_path}/model.ckpt.' in lines


def _two_keras_metrics_model_fn(features, labels, mode, params):
  """Two Keras metrics of one class (their variables share the names
  'total' and 'count'), as every head makes."""
  del labels
  p = v1.layers.dense(features['x'], 1, name='d',
                      kernel_initializer=v1.ones_initializer())
  mean_p = tf.keras.metrics.Mean(name='mean_p')
  mean_p.update_state(p)
  mean_x = tf.keras.metrics.Mean(name='mean_x')
  mean_x.update_state(features['x'])
  return params['spec'](mode, loss=tf.reduce_mean(p), eval_metric_ops={
      'mean_p': mean_p, 'mean_x': mean_x})


@pytest.mark.parametrize('engine', ENGINES)
def test_evaluate_several_keras_metrics_of_one_class(engine, tmp_path):
  est = _estimator(engine, tmp_path, _two_keras_metrics_model_fn)
  results = est.evaluate(_input_fn())  # x 0..7; p = x0 + x1 = 1, 5, 9, 13.
  assert float(results['mean_p']) == pytest.approx(7.0)
  assert float(results['mean_x']) == pytest.approx(3.5)
  assert float(results['loss']) == pytest.approx(7.0)


def _summary_tags(model_dir):
  tags = set()
  for path in tf.io.gfile.glob(os.path.join(model_dir, 'events.out.*')):
    for event in v1.train.summary_iterator(path):
      tags.update(value.tag for value in event.summary.value)
  return tags


def _own_loss_summary_model_fn(scope):
  """Trains; makes its own 'loss' summary (as a head does) at the graph's
  root, or under name scope `scope`."""

  def model_fn(features, labels, mode, params):
    del labels
    loss = tf.reduce_mean(v1.layers.dense(
        features['x'], 1, name='d', kernel_initializer=v1.ones_initializer()))
    with tf.name_scope(scope) if scope else contextlib.nullcontext():
      v1.summary.scalar('loss', loss)
    train_op = v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, v1.train.get_global_step())
    return params['spec'](mode, loss=loss, train_op=train_op)

  return model_fn


@pytest.mark.parametrize('engine', ENGINES)
@pytest.mark.parametrize('scope,expected', [
    (None, {'loss', 'global_step/sec'}),
    ('mine', {'loss', 'mine/loss', 'global_step/sec'})])
def test_estimator_adds_a_loss_summary_only_if_the_model_fn_made_none(
    engine, scope, expected, tmp_path):
  est = _estimator(engine, tmp_path, _own_loss_summary_model_fn(scope),
                   save_summary_steps=1, log_step_count_steps=1)
  est.train(lambda: _input_fn()().repeat(), steps=3)
  assert _summary_tags(str(tmp_path)) == expected
