"""The facade's Estimator against the real one, in-process.

Every test runs on the facade's classes (trainer.facade.*) on the facade's
lanes (TF >= 2.16) and on the real tf.estimator on TF 2.15, with the same
assertions: the real Estimator is the spec (TF 2.15 programs never run the
facade, so that lane runs the real side only).
Tiny linear model on generated data.
"""

import contextlib
import glob
import logging as std_logging
import os
import types

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.facade import early_stopping
from trainer.facade import estimator as estimator_lib
from trainer.facade import exporter as exporter_lib
from trainer.facade import extenders
from trainer.facade import run_config
from trainer.facade import training
from trainer.facade.export import export as export_lib
from trainer.facade.export import export_output
from trainer.facade.hooks import in_memory_evaluator
from trainer.facade.tpu import inference as tpu_inference
from trainer.facade.tpu import tpu_config
from trainer.facade.tpu import tpu_estimator as tpu_estimator_lib

ModeKeys = specs.ModeKeys
v1 = tf.compat.v1


def _facade():
  return types.SimpleNamespace(
      Estimator=estimator_lib.Estimator,
      TPUEstimator=tpu_estimator_lib.TPUEstimator,
      WarmStartSettings=estimator_lib.WarmStartSettings,
      RunConfig=run_config.RunConfig, TPURunConfig=tpu_config.TPURunConfig,
      TPUConfig=tpu_config.TPUConfig, EstimatorSpec=specs.EstimatorSpec,
      TPUEstimatorSpec=specs.TPUEstimatorSpec,
      ServingInputReceiver=export_lib.ServingInputReceiver,
      TrainSpec=training.TrainSpec, EvalSpec=training.EvalSpec,
      train_and_evaluate=training.train_and_evaluate,
      BestExporter=exporter_lib.BestExporter, add_metrics=extenders.add_metrics,
      stop_if_higher_hook=early_stopping.stop_if_higher_hook,
      stop_if_no_decrease_hook=early_stopping.stop_if_no_decrease_hook,
      make_stop_at_checkpoint_step_hook=(
          early_stopping.make_stop_at_checkpoint_step_hook),
      make_early_stopping_hook=early_stopping.make_early_stopping_hook,
      InMemoryEvaluatorHook=in_memory_evaluator.InMemoryEvaluatorHook,
      call_logit_fn=estimator_calls.call_logit_fn,
      build_raw_supervised_input_receiver_fn=(
          export_lib.build_raw_supervised_input_receiver_fn))


def _real():
  est, tpu = v1.estimator, v1.estimator.tpu
  return types.SimpleNamespace(
      Estimator=est.Estimator, TPUEstimator=tpu.TPUEstimator,
      WarmStartSettings=est.WarmStartSettings, RunConfig=est.RunConfig,
      TPURunConfig=tpu.RunConfig, TPUConfig=tpu.TPUConfig,
      EstimatorSpec=est.EstimatorSpec, TPUEstimatorSpec=tpu.TPUEstimatorSpec,
      ServingInputReceiver=est.export.ServingInputReceiver,
      TrainSpec=est.TrainSpec, EvalSpec=est.EvalSpec,
      train_and_evaluate=est.train_and_evaluate,
      BestExporter=est.BestExporter, add_metrics=tf.estimator.add_metrics,
      stop_if_higher_hook=tf.estimator.experimental.stop_if_higher_hook,
      stop_if_no_decrease_hook=(
          tf.estimator.experimental.stop_if_no_decrease_hook),
      make_stop_at_checkpoint_step_hook=(
          tf.estimator.experimental.make_stop_at_checkpoint_step_hook),
      make_early_stopping_hook=(
          tf.estimator.experimental.make_early_stopping_hook),
      InMemoryEvaluatorHook=tf.estimator.experimental.InMemoryEvaluatorHook,
      call_logit_fn=tf.estimator.experimental.call_logit_fn,
      build_raw_supervised_input_receiver_fn=(
          tf.estimator.experimental.build_raw_supervised_input_receiver_fn))


_API = None  # The API of the running test (set by the `api` fixture).


@pytest.fixture(params=[pytest.param('facade', marks=testutil.facade_lanes),
                        'real'], autouse=True)
def api(request):
  """The Estimator API under test: the facade's, or the real one."""
  global _API
  if request.param == 'real' and not testutil.HAS_ESTIMATOR:
    pytest.skip(f'TensorFlow {tf.__version__} has no real Estimator to '
                'compare with (removed in 2.16).')
  _API = _facade() if request.param == 'facade' else _real()
  yield _API
  _API = None


def _linear(features):
  w = v1.get_variable('linear/w', [4, 3])
  b = v1.get_variable('linear/b', [3], initializer=v1.zeros_initializer())
  return tf.matmul(features['x'], w) + b


def model_fn(features, labels, mode, params):
  logits = _linear(features)
  if mode == ModeKeys.PREDICT:
    return _API.EstimatorSpec(mode, predictions={
        'class': tf.argmax(logits, 1), 'logits': logits})
  loss = tf.identity(tf.reduce_mean(
      tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                     logits=logits)),
                     name='loss_t')
  if mode == ModeKeys.EVAL:
    return _API.EstimatorSpec(mode, loss=loss)
  train_op = v1.train.GradientDescentOptimizer(
      params.get('lr', 0.1)).minimize(loss, v1.train.get_global_step())
  return _API.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _examples(n, seed):
  x = tf.random.stateless_uniform([n, 4], seed=[seed, 0])
  y = tf.cast(tf.reduce_sum(x, 1) * 1.5, tf.int32) % 3
  return {'x': x}, y


def train_input_fn():
  return tf.data.Dataset.from_tensor_slices(_examples(64, 1)).repeat().batch(
      8, drop_remainder=True)


def eval_input_fn():  # 3 batches of 8.
  return tf.data.Dataset.from_tensor_slices(_examples(24, 2)).batch(8)


def predict_input_fn():
  return tf.data.Dataset.from_tensor_slices(_examples(24, 2)[0]).batch(8)


def _estimator(tmp_path, config=None, **kwargs):
  config = config or _API.RunConfig(save_checkpoints_steps=5)
  return _API.Estimator(model_fn, model_dir=str(tmp_path / 'model'),
                                 config=config, params=kwargs.pop(
                                     'params', {'lr': 0.1}), **kwargs)


def _checkpoint_steps(model_dir):
  state = tf.train.get_checkpoint_state(model_dir)
  return [int(p.rsplit('-', 1)[1]) for p in state.all_model_checkpoint_paths]


def _events(directory, tag):
  found = []
  for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag == tag:
          found.append((event.step, value.simple_value))
  return sorted(found)


@contextlib.contextmanager
def _tf_log_lines():
  """Collects the messages logged on TF's logger (LoggingTensorHook's)."""
  lines = []

  class Handler(std_logging.Handler):
    def emit(self, record):
      lines.append(record.getMessage())

  handler = Handler(level=std_logging.INFO)
  logger = std_logging.getLogger('tensorflow')
  level = logger.level
  logger.setLevel(std_logging.INFO)
  logger.addHandler(handler)
  try:
    yield lines
  finally:
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_train_steps_max_steps_resume_and_checkpoints(tmp_path, api):
  est = _estimator(tmp_path)
  assert est.train(train_input_fn, steps=7) is est
  model_dir = est.model_dir
  assert est.latest_checkpoint().endswith('model.ckpt-7')
  assert _checkpoint_steps(model_dir) == [0, 5, 7]  # At start, cadence, end.
  est.train(train_input_fn, steps=3)  # steps is incremental.
  assert _checkpoint_steps(model_dir) == [0, 5, 7, 10]
  est.train(train_input_fn, max_steps=10)  # Already there: skipped.
  assert _checkpoint_steps(model_dir) == [0, 5, 7, 10]
  est.train(train_input_fn, max_steps=12)
  assert est.get_variable_value('global_step') == 12
  assert set(est.get_variable_names()) == {'global_step', 'linear/w',
                                           'linear/b'}
  with pytest.raises(ValueError, match='both steps and max_steps'):
    est.train(train_input_fn, steps=1, max_steps=20)
  with pytest.raises(ValueError, match='steps > 0'):
    est.train(train_input_fn, steps=0)


def test_evaluate_dict_eval_events_and_checkpoint_path(tmp_path, api):
  est = _estimator(tmp_path)
  est.train(train_input_fn, max_steps=10)
  result = est.evaluate(eval_input_fn, steps=2)
  assert set(result) == {'loss', 'global_step'}
  assert result['global_step'] == 10 and isinstance(result['global_step'],
                                                    np.int64)
  assert isinstance(result['loss'], np.float32) and result['loss'] > 0
  assert _events(est.eval_dir(), 'loss') == [(10, pytest.approx(
      float(result['loss'])))]
  older = os.path.join(est.model_dir, 'model.ckpt-5')
  at_five = est.evaluate(eval_input_fn, checkpoint_path=older,
                         name='holdout')
  assert at_five['global_step'] == 5 and at_five['loss'] != result['loss']
  assert [s for s, _ in _events(os.path.join(est.model_dir, 'eval_holdout'),
                                'loss')] == [5]
  with pytest.raises(ValueError, match='not a valid checkpoint'):
    est.evaluate(eval_input_fn, checkpoint_path=older + '0')


def test_predict_dicts_keys_and_plain_values(tmp_path, api):
  est = _estimator(tmp_path)
  est.train(train_input_fn, steps=5)
  predictions = list(est.predict(predict_input_fn))
  assert len(predictions) == 24
  assert set(predictions[0]) == {'class', 'logits'}
  assert predictions[0]['logits'].shape == (3,)
  assert int(predictions[0]['class']) == int(np.argmax(
      predictions[0]['logits']))
  only = next(est.predict(predict_input_fn, predict_keys=['class']))
  assert set(only) == {'class'}
  with pytest.raises(ValueError, match='at least one output'):
    next(est.predict(predict_input_fn, predict_keys=['nope']))

  def logits_only(features, mode):
    logits = _linear(features)
    assert mode == ModeKeys.PREDICT
    return _API.EstimatorSpec(mode, predictions=logits)

  plain = api.Estimator(logits_only, model_dir=est.model_dir)
  values = list(plain.predict(predict_input_fn))
  assert len(values) == 24 and values[0].shape == (3,)
  np.testing.assert_allclose(values[0], predictions[0]['logits'], rtol=1e-6)


def test_tpu_estimator_gives_params_as_tpu_estimator_does(tmp_path, api):
  seen = []

  def tpu_model_fn(features, labels, mode, params):
    seen.append(('model_fn', mode, sorted(params), params['batch_size']))
    spec = model_fn(features, labels, mode, {'lr': params['lr']})
    return _API.TPUEstimatorSpec(mode, loss=spec.loss,
                                  train_op=spec.train_op,
                                  predictions=spec.predictions)

  def input_fn(params):
    seen.append(('input_fn', sorted(params), params['batch_size']))
    return eval_input_fn().unbatch().repeat().batch(params['batch_size'],
                                                    drop_remainder=True)

  config = api.TPURunConfig(
      model_dir=str(tmp_path / 'model'), save_checkpoints_steps=4,
      tpu_config=api.TPUConfig(iterations_per_loop=2, num_shards=8))
  est = api.TPUEstimator(
      tpu_model_fn, config=config, use_tpu=False, params={'lr': 0.1},
      train_batch_size=8, eval_batch_size=4, predict_batch_size=2)
  est.train(input_fn, max_steps=4)
  assert est.evaluate(input_fn, steps=1)['global_step'] == 4
  assert ('model_fn', 'train', ['batch_size', 'lr', 'use_tpu'], 8) in seen
  assert ('input_fn', ['batch_size', 'lr'], 8) in seen
  assert ('model_fn', 'eval', ['batch_size', 'lr', 'use_tpu'], 4) in seen
  with pytest.raises(ValueError, match='reserved keys'):
    api.TPUEstimator(tpu_model_fn, config=config,
                               params={'batch_size': 1})
  with pytest.raises(ValueError, match='tpu_config.RunConfig'):
    api.TPUEstimator(tpu_model_fn, config=api.RunConfig())


def test_model_fn_signature_subsets_and_config(tmp_path, api):
  seen = {}

  def no_params(features, labels, mode, config):
    seen['config'] = config
    return model_fn(features, labels, mode, {})

  est = api.Estimator(no_params, model_dir=str(tmp_path / 'm'))
  est.train(train_input_fn, steps=1)
  assert isinstance(seen['config'], api.RunConfig)
  assert seen['config'].model_dir == est.model_dir
  with pytest.raises(ValueError, match='does not include params'):
    api.Estimator(no_params, params={'lr': 1.0})
  with pytest.raises(ValueError, match='must include features argument'):
    api.Estimator(lambda x, labels: None)
  with pytest.raises(ValueError, match='different values'):
    api.Estimator(no_params, model_dir='/a',
                            config=api.RunConfig(model_dir='/b'))
  temporary = api.Estimator(no_params)
  assert os.path.isdir(temporary.model_dir)


def test_logging_stop_and_nan_hooks_run_without_a_session(tmp_path, api):
  est = _estimator(tmp_path)
  logging_hook = v1.train.LoggingTensorHook({'loss': 'loss_t'},
                                            every_n_iter=2)
  with _tf_log_lines() as lines:
    est.train(train_input_fn, hooks=[logging_hook,
                                     v1.train.StopAtStepHook(num_steps=5)])
  assert est.get_variable_value('global_step') == 5
  mine = [l for l in lines if l.startswith('loss = ') and 'step' not in l]
  assert len(mine) == 3  # Steps 0, 2, 4 (Estimator's own line has a step).

  def nan_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    return spec._replace(loss=spec.loss * np.nan)

  nan_est = api.Estimator(nan_model_fn,
                                    model_dir=str(tmp_path / 'nan'))
  with pytest.raises(v1.train.NanLossDuringTrainingError):
    nan_est.train(train_input_fn, steps=3,
                  hooks=[v1.train.NanTensorHook('loss_t:0')])


def test_summary_and_step_counter_hooks_run_session_hooks_fail(tmp_path, api):
  est = _estimator(tmp_path)
  summary_dir = str(tmp_path / 'summaries')

  def summarised(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    if mode != ModeKeys.TRAIN:
      return spec
    summary = v1.summary.scalar('loss_again', spec.loss)
    return spec._replace(training_hooks=(v1.train.SummarySaverHook(
        save_steps=2, output_dir=summary_dir, summary_op=summary),))

  est = api.Estimator(summarised, model_dir=est.model_dir,
                                params={'lr': 0.1})
  est.train(train_input_fn, steps=4, hooks=[
      v1.train.StepCounterHook(every_n_steps=2, output_dir=summary_dir)])
  assert [s for s, _ in _events(summary_dir, 'loss_again')] == [1, 3]
  assert _events(summary_dir, 'global_step/sec')

  class SessionHook(v1.train.SessionRunHook):
    """Runs graph tensors of its own in the session, as TF1 hooks may."""

    def begin(self):
      self._w = v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES)[0]
      self._doubled = self._w * 2
      self.seen = []

    def after_create_session(self, session, coord):
      self.seen.append(session.run(self._doubled))

  session_hook = SessionHook()
  final = v1.train.FinalOpsHook({'loss': 'loss_t:0'})
  est.train(train_input_fn, steps=1, hooks=[session_hook, final])
  np.testing.assert_allclose(session_hook.seen[0],
                             2 * est.get_variable_value('linear/w'), rtol=0,
                             atol=0.2)  # One step of lr 0.1 since.
  assert final.final_ops_values['loss'] > 0
  with pytest.raises(TypeError, match='SessionRunHook'):
    est.train(train_input_fn, steps=1, hooks=[object()])


def test_checkpoint_saver_hook_and_listeners(tmp_path, api):
  est = _estimator(tmp_path)
  saves = []

  class Listener(v1.train.CheckpointSaverListener):
    def after_save(self, session, global_step_value):
      saves.append(global_step_value)

  saver_hook = v1.train.CheckpointSaverHook(est.model_dir, save_steps=3)
  est.train(train_input_fn, steps=7, hooks=[saver_hook],
            saving_listeners=[Listener()])
  assert _checkpoint_steps(est.model_dir) == [0, 3, 6, 7]
  assert saves == [0, 3, 6, 7]
  elsewhere = v1.train.CheckpointSaverHook(str(tmp_path / 'x'), save_steps=3)
  est.train(train_input_fn, steps=1, hooks=[elsewhere])
  assert tf.train.latest_checkpoint(str(tmp_path / 'x')).endswith('-8')

  calls = []

  class Stopper(v1.train.CheckpointSaverListener):
    def before_save(self, session, global_step_value):
      calls.append(('before', global_step_value))

    def after_save(self, session, global_step_value):
      calls.append(('after', global_step_value))
      return global_step_value >= 12  # Stops training there.

  est.train(train_input_fn, steps=20, saving_listeners=[Stopper()])
  # model_dir's latest checkpoint is 7 (the hook above saved elsewhere):
  # training resumes there, saves at its start and 5 steps later.
  assert calls == [('before', 7), ('after', 7), ('before', 12),
                   ('after', 12)]
  assert est.get_variable_value('global_step') == 12


def test_warm_start_from_checkpoint_and_settings(tmp_path, api):
  source = str(tmp_path / 'source' / 'init.ckpt')
  values = {'linear/w': np.full([4, 3], 0.5, np.float32),
            'linear/b': np.array([1., 2., 3.], np.float32)}
  with tf.Graph().as_default():
    variables = {n: v1.Variable(a, name=n) for n, a in values.items()}
    with v1.Session() as session:
      session.run(v1.global_variables_initializer())
      v1.train.Saver(variables).save(session, source)

  est = _estimator(tmp_path, warm_start_from=source, params={'lr': 0.0})
  est.train(train_input_fn, steps=1)
  for name, value in values.items():
    np.testing.assert_array_equal(est.get_variable_value(name), value)

  only_bias = api.WarmStartSettings(source, vars_to_warm_start='.*b')
  est = api.Estimator(model_fn, model_dir=str(tmp_path / 'b'),
                                params={'lr': 0.0}, warm_start_from=only_bias)
  est.train(train_input_fn, steps=1)
  np.testing.assert_array_equal(est.get_variable_value('linear/b'),
                                values['linear/b'])
  assert not np.array_equal(est.get_variable_value('linear/w'),
                            values['linear/w'])


def test_train_until_the_input_ends(tmp_path, api):
  est = _estimator(tmp_path)
  finite = lambda: eval_input_fn().repeat(2)  # 6 batches.  pylint: disable=unnecessary-lambda-assignment
  est.train(finite)
  assert est.get_variable_value('global_step') == 6
  assert est.latest_checkpoint().endswith('model.ckpt-6')

  summaries = str(tmp_path / 'host_call')

  def host_call_fn(step, loss):
    with tf.summary.create_file_writer(summaries).as_default():
      tf.summary.scalar('host_loss', loss[0], step=step[0])
    return tf.compat.v1.summary.all_v2_summary_ops()

  def tpu_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, {'lr': 0.1})
    step = tf.reshape(v1.train.get_global_step(), [1])
    return _API.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op,
                                  host_call=(host_call_fn, [
                                      step, tf.reshape(spec.loss, [1])]))

  def tpu_input_fn(params):  # 6 batches: loops of 3, 3, then none.
    return finite().unbatch().batch(params['batch_size'], drop_remainder=True)

  config = api.TPURunConfig(
      model_dir=str(tmp_path / 'tpu'), save_checkpoints_steps=100,
      tpu_config=api.TPUConfig(iterations_per_loop=3))
  tpu = api.TPUEstimator(tpu_model_fn, config=config,
                                   use_tpu=False, train_batch_size=8)
  with _tf_log_lines() as lines:
    tpu.train(tpu_input_fn, hooks=[v1.train.LoggingTensorHook(
        {'loss': 'loss_t'}, every_n_iter=1)])
  assert tpu.get_variable_value('global_step') == 6
  assert _checkpoint_steps(tpu.model_dir) == [0, 6]
  # host_call runs every step; the step it reads is unordered with the
  # step's increment in a TF1 graph (either value may be written).
  host_steps = [s for s, _ in _events(summaries, 'host_loss')]
  assert len(host_steps) == 6 and all(0 <= s <= 6 for s in host_steps)
  assert len([l for l in lines if l.startswith('loss = ')]) == 6


def test_train_op_ignored_outside_train_and_tensor_input(tmp_path, api):
  def train_op_in_every_mode(features, labels, mode, params):
    del params
    logits = _linear(features)
    if mode == ModeKeys.PREDICT:
      return _API.EstimatorSpec(mode, predictions=logits)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, v1.train.get_global_step())
    return _API.EstimatorSpec(mode, loss=loss, train_op=train_op)

  est = api.Estimator(train_op_in_every_mode,
                                model_dir=str(tmp_path / 'm'))
  est.train(train_input_fn, steps=2)
  before = est.get_variable_value('linear/w')
  assert est.evaluate(eval_input_fn)['global_step'] == 2
  np.testing.assert_array_equal(est.get_variable_value('linear/w'), before)

  def tensors_not_dataset():
    return _examples(8, 1)

  est.train(tensors_not_dataset, steps=1)  # One batch, every step.
  assert est.get_variable_value('global_step') == 3


def test_batches_metric_ops_export_and_no_checkpoint(tmp_path, api):
  est = _estimator(tmp_path)
  est.train(train_input_fn, steps=2)
  batches = list(est.predict(predict_input_fn, yield_single_examples=False))
  assert [b['logits'].shape for b in batches] == [(8, 3)] * 3

  def with_metric_ops(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    if mode != ModeKeys.EVAL:
      return spec
    with v1.variable_scope(v1.get_variable_scope(), reuse=True):
      logits = _linear(features)
    return spec._replace(eval_metric_ops={'accuracy': v1.metrics.accuracy(
        labels, tf.argmax(logits, 1))})

  metrics = api.Estimator(
      with_metric_ops, model_dir=est.model_dir,
      params={}).evaluate(eval_input_fn)
  classes = np.concatenate([b['class'] for b in batches])
  labels = np.concatenate([y.numpy() for _, y in eval_input_fn()])
  assert metrics['accuracy'] == pytest.approx(np.mean(classes == labels))

  def serving_input_receiver_fn():
    x = v1.placeholder(tf.float32, [None, 4], name='x')
    return api.ServingInputReceiver({'x': x}, {'x': x})

  path = est.export_saved_model(str(tmp_path / 'export'),
                                serving_input_receiver_fn)
  assert isinstance(path, bytes)
  served = tf.saved_model.load(path.decode()).signatures['serving_default']
  x = next(iter(predict_input_fn()))['x']
  np.testing.assert_allclose(served(x=x)['logits'].numpy(),
                             batches[0]['logits'], rtol=1e-5)
  empty = api.Estimator(model_fn, model_dir=str(tmp_path / 'e'))
  assert set(empty.evaluate(eval_input_fn)) == {'loss', 'global_step'}
  with pytest.raises(ValueError, match='input_receiver_fn must be defined'):
    est.export_saved_model(str(tmp_path / 'export'), None)


def test_train_and_evaluate_evaluates_after_each_checkpoint(tmp_path, api):
  est = _estimator(tmp_path)
  metrics, exports = api.train_and_evaluate(
      est, api.TrainSpec(train_input_fn, max_steps=10),
      api.EvalSpec(eval_input_fn, steps=2, name='holdout',
                        throttle_secs=0))
  assert metrics['global_step'] == 10 and exports == []
  assert [s for s, _ in _events(os.path.join(est.model_dir, 'eval_holdout'),
                                'loss')] == [5, 10]
  again = api.train_and_evaluate(
      est, api.TrainSpec(train_input_fn, max_steps=10),
      api.EvalSpec(eval_input_fn, throttle_secs=0))
  assert again == (None, None)  # Nothing trained, nothing evaluated.
  with pytest.raises(TypeError, match='`eval_spec` must have type'):
    api.train_and_evaluate(est, api.TrainSpec(train_input_fn),
                                None)


@pytest.mark.parametrize('strategy', ['one_device', 'mirrored_1'])
def test_one_replica_strategy_runs_as_in_a_session(tmp_path, strategy):
  """RunConfig(train_distribute/eval_distribute=<one replica>), as
  official/r1 models set by default: a stateful op nothing fetches never
  runs, metric values keep their dtypes, as without a strategy."""
  make = {'one_device': lambda: tf.distribute.OneDeviceStrategy('/cpu:0'),
          'mirrored_1': lambda: tf.distribute.MirroredStrategy(['/cpu:0'])}
  config = _API.RunConfig(train_distribute=make[strategy](),
                          eval_distribute=make[strategy]())
  calls = []

  def side_effect(x):
    calls.append(1)
    return x

  def counting_model_fn(features, labels, mode, params):
    tf.numpy_function(side_effect, [tf.constant(1.0)], tf.float32)
    spec = model_fn(features, labels, mode, params)
    if mode != ModeKeys.EVAL:
      return spec
    count = v1.metrics.true_positives(labels, labels)
    return spec._replace(eval_metric_ops={
        'count_int64': (tf.cast(count[0], tf.int64), count[1])})

  est = _API.Estimator(counting_model_fn, model_dir=str(tmp_path / 'model'),
                       config=config, params={})
  est.train(train_input_fn, steps=3)
  results = est.evaluate(eval_input_fn)
  assert calls == []
  assert est.get_variable_value('global_step') == 3
  assert isinstance(results['count_int64'], np.int64)


def test_feature_column_input_layer_in_a_model_fn(tmp_path, api):
  """tf.feature_column inside a model_fn: vocabulary lookup, embedding,
  indicator and numeric columns (no XLA, as Estimator: string features)."""

  def input_fn():
    features = {'color': tf.constant([['red'], ['blue'], ['green'], ['red']]),
                'size': tf.constant([[1.], [2.], [3.], [4.]])}
    return tf.data.Dataset.from_tensors(
        (features, tf.constant([0, 1, 2, 0]))).repeat()

  def fc_model_fn(features, labels, mode):
    color = tf.feature_column.categorical_column_with_vocabulary_list(
        'color', ['red', 'green', 'blue'])
    net = v1.feature_column.input_layer(features, [
        tf.feature_column.indicator_column(color),
        tf.feature_column.embedding_column(color, 2),
        tf.feature_column.numeric_column('size')])
    logits = tf.matmul(net, v1.get_variable('w', [6, 3]))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    if mode == ModeKeys.EVAL:
      return _API.EstimatorSpec(mode, loss=loss)
    return _API.EstimatorSpec(mode, loss=loss, train_op=(
        v1.train.GradientDescentOptimizer(0.5).minimize(
            loss, v1.train.get_global_step())))

  est = api.Estimator(fc_model_fn, model_dir=str(tmp_path / 'm'))
  before = est.train(input_fn, steps=1).evaluate(input_fn, steps=1)['loss']
  after = est.train(input_fn, steps=20).evaluate(input_fn, steps=1)['loss']
  assert after < before
  assert 'input_layer/color_embedding/embedding_weights' in (
      est.get_variable_names())


def test_checkpoint_seconds_and_keep_max(tmp_path, api):
  hourly = _estimator(tmp_path, config=api.RunConfig(
      save_checkpoints_secs=3600, keep_checkpoint_max=2))
  hourly.train(train_input_fn, steps=7)
  assert _checkpoint_steps(hourly.model_dir) == [0, 7]  # Start and end.
  hourly.train(train_input_fn, steps=3)
  assert _checkpoint_steps(hourly.model_dir) == [7, 10]  # Keeps 2.
  assert not tf.io.gfile.glob(os.path.join(hourly.model_dir,
                                           'model.ckpt-0.*'))


def test_add_metrics_adds_eval_metrics_only(tmp_path, api):
  def metric_fn(labels, predictions, features, config):
    assert config.model_dir == str(tmp_path / 'model')
    del predictions  # None: the EVAL spec has none.
    return {'mean_label': v1.metrics.mean(tf.cast(labels, tf.float32)),
            'mean_x': v1.metrics.mean(features['x'])}

  est = api.add_metrics(_estimator(tmp_path), metric_fn)
  est.train(train_input_fn, max_steps=5)
  metrics = est.evaluate(eval_input_fn)
  labels = _examples(24, 2)[1].numpy()
  assert metrics['mean_label'] == pytest.approx(labels.mean())
  assert set(metrics) == {'loss', 'global_step', 'mean_label', 'mean_x'}
  assert [s for s, _ in _events(est.eval_dir(), 'mean_label')] == [5]
  with pytest.raises(ValueError, match='not expected args'):
    api.add_metrics(est, lambda labels, logits: {})


def _serving_input_fn():
  x = v1.placeholder(tf.float32, [None, 4], name='x')
  return _API.ServingInputReceiver({'x': x}, {'x': x})


def test_best_exporter_exports_when_the_loss_improves(tmp_path, api):
  # Evaluations at steps 5, 10, 15 with a loss made to rise after the
  # first: only the first exports; keep 1.
  def rising_loss(best_eval_result, current_eval_result):
    return current_eval_result['global_step'] > 100  # Never better.

  exporters = [api.BestExporter('best', _serving_input_fn,
                                exports_to_keep=1),
               api.BestExporter('never', _serving_input_fn,
                                compare_fn=rising_loss)]
  est = _estimator(tmp_path)
  _, exports = api.train_and_evaluate(
      est, api.TrainSpec(train_input_fn, max_steps=15),
      api.EvalSpec(eval_input_fn, throttle_secs=0, exporters=exporters))
  base = os.path.join(est.model_dir, 'export')
  assert len(os.listdir(os.path.join(base, 'best'))) == 1
  assert len(os.listdir(os.path.join(base, 'never'))) == 1  # The first.
  assert len(exports) == 2  # The last evaluation's results, one each.
  with pytest.raises(ValueError, match='must include current_eval_result'):
    api.BestExporter('x', _serving_input_fn, compare_fn=lambda
                     best_eval_result: True)


def test_early_stopping_hooks_read_eval_events_and_stop(tmp_path, api):
  est = _estimator(tmp_path)

  def hook(make, *args, **kwargs):
    return make(est, 'loss', *args, run_every_secs=None, run_every_steps=1,
                **kwargs)

  # No evaluation yet: nothing to stop on. The hook's variable is saved
  # (Estimator's restore fails on a checkpoint made without it).
  est.train(train_input_fn, max_steps=5,
            hooks=[hook(api.stop_if_higher_hook, 0.0)])
  assert est.get_variable_value('global_step') == 5
  assert not est.get_variable_value('signal_early_stopping/STOP')
  loss = est.evaluate(eval_input_fn)['loss']
  # With a min_steps beyond every evaluation it never stops.
  est.train(train_input_fn, max_steps=7, hooks=[
      hook(api.stop_if_no_decrease_hook, 0, min_steps=10**6)])
  assert est.get_variable_value('global_step') == 7
  # The evaluation at step 5 is above the threshold: the first check stops.
  est.train(train_input_fn, max_steps=50,
            hooks=[hook(api.stop_if_higher_hook, loss - 1.0)])
  assert est.get_variable_value('global_step') == 8
  assert est.get_variable_value('signal_early_stopping/STOP')
  with pytest.raises(ValueError, match='Only one of'):
    api.stop_if_higher_hook(est, 'loss', 0.0, run_every_steps=1)
  # The chief's stop-at-checkpoint-step hook is a StopAtStepHook.
  est.train(train_input_fn, max_steps=50,
            hooks=[api.make_stop_at_checkpoint_step_hook(est, 11)])
  assert est.get_variable_value('global_step') == 11
  with pytest.raises(TypeError, match='must have type'):
    api.make_early_stopping_hook(object(), lambda: True)


def _eval_events(model_dir, name='eval'):
  """{step: {tag: simple_value or tensor proto}} of model_dir/NAME."""
  found = {}
  for path in glob.glob(os.path.join(model_dir, name, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        found.setdefault(event.step, {})[value.tag] = (
            value.simple_value if value.HasField('simple_value')
            else value.WhichOneof('value'))
  return found


def test_in_memory_evaluator_evaluates_training_variables(tmp_path, api):
  est = _estimator(tmp_path)
  hook = api.InMemoryEvaluatorHook(est, eval_input_fn, every_n_iter=2)
  est.train(train_input_fn, max_steps=5, hooks=[hook])
  events = _eval_events(est.model_dir)
  # At session creation, every 2 training steps, and at the end; no
  # checkpoint_path summary (no checkpoint is read).
  assert sorted(events) == [0, 2, 4, 5]
  assert all(set(tags) == {'loss'} for tags in events.values())
  final = est.evaluate(eval_input_fn)  # The step-5 checkpoint.
  assert events[5]['loss'] == pytest.approx(float(final['loss']), rel=1e-6)
  assert events[0]['loss'] != pytest.approx(events[5]['loss'])
  with pytest.raises(ValueError, match='invalid every_n_iter'):
    api.InMemoryEvaluatorHook(est, eval_input_fn, every_n_iter=0)


def test_eval_summaries_by_value_type(tmp_path, api):
  """Estimator writes float and int results as scalars, a serialized
  Summary as its values (TAG/i) and an array as a tensor."""
  est = _estimator(tmp_path)
  est.train(train_input_fn, max_steps=2)

  def with_typed_metrics(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    if mode != ModeKeys.EVAL:
      return spec
    image = v1.summary.image('picture', tf.zeros([1, 2, 2, 1]))
    count = v1.metrics.true_positives(labels, labels)
    return spec._replace(eval_metric_ops={
        'count': (tf.cast(count[0], tf.int64), count[1]),
        'picture': (image, tf.no_op()),
        'vector': (tf.constant([1.0, 2.0]), tf.no_op())})

  results = api.Estimator(with_typed_metrics, model_dir=est.model_dir,
                          params={}).evaluate(eval_input_fn)
  assert isinstance(results['picture'], bytes)
  assert isinstance(results['loss'], np.float32)
  events = _eval_events(est.model_dir)[2]
  assert set(events) == {'loss', 'count', 'picture/0', 'vector',
                         'checkpoint_path'}
  assert events['picture/0'] == 'image'
  assert events['vector'] == 'tensor'
  assert events['count'] == results['count']


def test_call_logit_fn_passes_what_the_fn_names(api):
  def logit_fn(features, mode):
    return features['a'] if mode == ModeKeys.TRAIN else features['b']

  features = {'a': tf.constant([[1.0]]), 'b': tf.constant([[2.0]])}
  logits = api.call_logit_fn(logit_fn, features, ModeKeys.EVAL, None, None)
  assert float(np.squeeze(logits)) == 2.0
  with pytest.raises(ValueError, match='should return a Tensor'):
    api.call_logit_fn(lambda features: [features['a']], features,
                      ModeKeys.EVAL, None, None)


def test_supervised_receivers_export_train_and_eval_graphs(tmp_path, api):
  est = _estimator(tmp_path)
  est.train(train_input_fn, max_steps=3)
  features, labels = next(iter(eval_input_fn()))
  receiver_fn = api.build_raw_supervised_input_receiver_fn(
      {'x': features['x']}, labels)
  with pytest.raises(ValueError, match='distinct keys'):
    api.build_raw_supervised_input_receiver_fn({'label': features['x']},
                                               labels)
  path = est.experimental_export_all_saved_models(
      str(tmp_path / 'export'), {ModeKeys.TRAIN: receiver_fn,
                                 ModeKeys.EVAL: receiver_fn,
                                 ModeKeys.PREDICT: _serving_input_fn})
  evaluator = tf.compat.v1.saved_model.load_v2(path.decode(), tags=['eval'])
  outputs = evaluator.signatures['eval'](x=features['x'], label=labels)
  arrays = ({'x': features['x'].numpy()}, labels.numpy())
  expected = est.evaluate(
      lambda: tf.data.Dataset.from_tensors(arrays))['loss']
  assert float(outputs['loss']) == pytest.approx(float(expected), rel=1e-6)
  trainer = tf.compat.v1.saved_model.load_v2(path.decode(), tags=['train'])
  assert 'train' in trainer.signatures


def _tpu_estimator(tmp_path, **kwargs):
  def tpu_model_fn(features, labels, mode, params):
    if mode == ModeKeys.PREDICT:
      if params['use_tpu']:  # export API V2's TPU graph.
        logits = _tpu_estimator_module().inference_on_tpu(
            lambda x: [_linear({'x': x})], [features['x']], 1, 4, 100)[0]
      else:
        logits = _linear(features)
      probabilities = tf.nn.softmax(logits)
      return _API.TPUEstimatorSpec(mode, predictions={
          'probabilities': probabilities, 'class': tf.argmax(logits, 1)},
          export_outputs=_export_outputs(probabilities)
          if 'export_outputs' in params else None)
    spec = model_fn(features, labels, mode, {'lr': 0.1})
    return _API.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op)

  return _API.TPUEstimator(
      model_fn=tpu_model_fn, model_dir=str(tmp_path / 'model'),
      config=_API.TPURunConfig(), use_tpu=False, train_batch_size=8,
      params=kwargs.pop('params', {}), **kwargs)


def _export_outputs(probabilities):
  # The classification signature needs a tf.Example input, so it is left
  # out; its `classes` are None.
  export = tf.compat.v1.estimator.export if testutil.HAS_ESTIMATOR else (
      export_output)
  return {'serving_default': export.PredictOutput({'scores': probabilities}),
          'classify': export.ClassificationOutput(scores=probabilities)}


def _tpu_estimator_module():
  if _API.TPUEstimator is tpu_estimator_lib.TPUEstimator:
    return tpu_inference
  from tensorflow_estimator.python.estimator.tpu import tpu_estimator  # pylint: disable=g-import-not-at-top
  return tpu_estimator


def _serving_receiver():
  x = v1.placeholder(tf.float32, [None, 4], name='x')
  return _API.ServingInputReceiver({'x': x}, {'x': x})


def _meta_graphs(export_dir):
  """[(tags, {signature: (inputs, outputs)}, ops, function ops)] of a
  SavedModel, tensor names with their dtypes."""
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
  model = saved_model_pb2.SavedModel()
  with open(os.path.join(export_dir, b'saved_model.pb'), 'rb') as f:
    model.ParseFromString(f.read())
  graphs = []
  for graph in model.meta_graphs:
    signatures = {
        key: ({k: (v.name, v.dtype) for k, v in sig.inputs.items()},
              {k: (v.name, v.dtype) for k, v in sig.outputs.items()})
        for key, sig in graph.signature_def.items()}
    graphs.append((list(graph.meta_info_def.tags), signatures,
                   {n.op for n in graph.graph_def.node},
                   {n.op for f in graph.graph_def.library.function
                    for n in f.node_def}))
  return graphs


@pytest.mark.parametrize('export_outputs', [False, True])
def test_tpu_export_adds_the_tpu_inference_graph(tmp_path, export_outputs):
  """export_to_tpu (default): after the CPU serving graph, a serve,tpu graph
  whose signatures read the outputs of a TPUPartitionedCall of the model_fn
  rewritten for TPU (the same tensor names as TPUEstimator's)."""
  est = _tpu_estimator(
      tmp_path, params={'export_outputs': 1} if export_outputs else {})
  est.train(lambda params: train_input_fn(), steps=2)
  path = est.export_saved_model(str(tmp_path / 'export'), _serving_receiver)
  (cpu_tags, cpu_sigs, _, _), (tpu_tags, tpu_sigs, ops, fn_ops) = (
      _meta_graphs(path))
  assert (cpu_tags, tpu_tags) == (['serve'], ['serve', 'tpu'])
  assert set(cpu_sigs) == set(tpu_sigs)
  assert {'TPUPartitionedCall', 'TPUOrdinalSelector'} <= ops
  assert 'MatMul' not in ops and {'MatMul', 'TPUReplicateMetadata'} <= fn_ops
  if export_outputs:
    assert tpu_sigs == {'serving_default': (
        {'x': ('x:0', 1)}, {'scores': ('TPUPartitionedCall:3', 1)})}
  else:
    assert tpu_sigs == {'serving_default': (
        {'x': ('x:0', 1)}, {'class': ('TPUPartitionedCall:3', 9),
                            'probabilities': ('TPUPartitionedCall:2', 1)})}
  # The CPU graph still serves on the CPU.
  predict = tf.compat.v1.saved_model.load_v2(path.decode(), tags=['serve'])
  outputs = predict.signatures['serving_default'](x=tf.ones([2, 4]))
  assert outputs[('scores' if export_outputs else 'probabilities')].shape == [
      2, 3]


def test_tpu_export_api_v2_model_fn_calls_inference_on_tpu(tmp_path):
  """export_saved_model_api_version V2: the model_fn, given use_tpu True,
  puts its own computation on TPU (here behind a batching function)."""
  est = _tpu_estimator(
      tmp_path, export_saved_model_api_version=(
          _tpu_estimator_module().ExportSavedModelApiVersion.V2))
  est.train(lambda params: train_input_fn(), steps=2)
  path = est.export_saved_model(str(tmp_path / 'export'), _serving_receiver)
  _, (tpu_tags, tpu_sigs, ops, fn_ops) = _meta_graphs(path)
  assert tpu_tags == ['serve', 'tpu']
  assert tpu_sigs['serving_default'][1]['class'] == ('ArgMax:0', 9)
  assert 'BatchFunction' in ops and 'MatMul' not in ops
  assert {'TPUPartitionedCall', 'MatMul', 'TPUReplicateMetadata'} <= fn_ops


def test_tpu_export_without_the_cpu_graph_fails_off_tpu(tmp_path):
  """export_to_tpu=True, export_to_cpu=False: the TPU graph restores the
  variables, which cannot run off TPU; no export is left finished."""
  est = _tpu_estimator(tmp_path, export_to_tpu=True, export_to_cpu=False)
  est.train(lambda params: train_input_fn(), steps=2)
  export_base = tmp_path / 'export'
  with pytest.raises(tf.errors.InvalidArgumentError, match='TPUOrdinal'):
    est.export_saved_model(str(export_base), _serving_receiver)
  finished = [p for p in glob.glob(str(export_base / '*'))
              if 'temp-' not in os.path.basename(p)]
  assert not finished


def test_export_with_a_checkpoint_as_the_scaffold_saver(tmp_path):
  """Scaffold(saver=tf.train.Checkpoint(...)) in PREDICT: the export restores
  and saves what the Checkpoint tracks (its object-graph names)."""
  est = _estimator(tmp_path)
  est.train(train_input_fn, max_steps=2)

  def checkpoint_saver_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    if mode != ModeKeys.PREDICT:
      return spec
    with v1.variable_scope('linear', reuse=True):
      weights = v1.get_variable('w')
    return spec._replace(scaffold=v1.train.Scaffold(
        saver=tf.train.Checkpoint(weights=weights)))

  exporter = _API.Estimator(checkpoint_saver_model_fn,
                            model_dir=est.model_dir, params={})
  # The facade names what the checkpoint lacks before restoring
  # (trainer/guard/checkpoint_fit.py); Estimator fails in the restore.
  with pytest.raises(ValueError, match='Could not load all requested|'
                     'weights: not in the checkpoint'):
    exporter.export_saved_model(str(tmp_path / 'export'), _serving_input_fn)
  weights = tf.train.Checkpoint(weights=tf.Variable(
      est.get_variable_value('linear/w')))
  weights.save(str(tmp_path / 'object_ckpt' / 'ckpt'))
  path = exporter.export_saved_model(
      str(tmp_path / 'export'), _serving_input_fn,
      checkpoint_path=tf.train.latest_checkpoint(str(tmp_path / 'object_ckpt')))
  names = [name for name, _ in tf.train.list_variables(
      os.path.join(path.decode(), 'variables', 'variables'))]
  assert 'weights/.ATTRIBUTES/VARIABLE_VALUE' in names


@pytest.mark.parametrize('kwargs, error, message', [
    ({'train_batch_size': 1.0}, TypeError, 'train_batch_size must be int'),
    ({'train_batch_size': 8, 'eval_batch_size': 0}, ValueError,
     'eval_batch_size must be positive'),
    ({'train_batch_size': 8, 'predict_batch_size': np.float32(4)}, TypeError,
     'predict_batch_size must be int'),
    ({'train_batch_size': None}, ValueError, 'cannot be `None`')])
def test_tpu_estimator_checks_batch_sizes_on_tpu(kwargs, error, message):
  """use_tpu=True: batch sizes are checked in the constructor (TypeError for
  a non-int, ValueError for a non-positive one), before any TPU is
  looked for."""
  config = _API.TPURunConfig(master='', tpu_config=_API.TPUConfig(
      iterations_per_loop=2))
  with pytest.raises(error, match=message):
    _API.TPUEstimator(model_fn=lambda features, labels, mode, params: None,
                      config=config, use_tpu=True, **kwargs)
  ok = _API.TPUEstimator(model_fn=lambda features, labels, mode, params: None,
                         config=config, use_tpu=False, **kwargs)
  assert ok.config.tpu_config.iterations_per_loop == 2


def test_export_all_restores_the_checkpoint_into_every_mode(tmp_path):
  """Each meta graph restores the checkpoint: a PREDICT graph with a
  variable the checkpoint lacks fails the export after the TRAIN graph."""
  est = _estimator(tmp_path)
  est.train(train_input_fn, max_steps=2)

  def predict_only_variable_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    if mode == ModeKeys.PREDICT:
      v1.get_variable('predict_only', [])
    return spec

  exporter = _API.Estimator(predict_only_variable_model_fn,
                            model_dir=est.model_dir, params={})
  features, labels = next(iter(eval_input_fn()))
  receiver_fn = _API.build_raw_supervised_input_receiver_fn(
      {'x': features['x']}, labels)
  # Estimator fails in the restore; the facade names the variable first.
  with pytest.raises(ValueError, match='mode `infer` while restoring|'
                     'predict_only: not in the checkpoint'):
    exporter.experimental_export_all_saved_models(
        str(tmp_path / 'export'), {ModeKeys.TRAIN: receiver_fn,
                                   ModeKeys.PREDICT: _serving_input_fn})
