"""input_fns that return tensors, as Estimator and TPUEstimator accept them,
under the tf2 runner: the same training as the Dataset they stand for.

Forms: `make_one_shot_iterator(dataset).get_next()` with ops applied to the
tensors afterwards (SimCLR's input_fn returns such tensors), features only,
tensors made without an iterator (evaluated anew each step, as a TF1
session does). Compared with the input_fn that returns the equivalent
Dataset, and on TF 2.15 with the real TPUEstimator given the tensors.
"""

import re

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.runners import registry as runners
from trainer.engines.tf2 import input_tensors

v1 = tf.compat.v1
N, BATCH = 48, 8


def _examples():
  rng = np.random.RandomState(3)
  x = rng.uniform(-1, 1, size=(N, 4)).astype(np.float32)
  return x, (x.sum(axis=1) > 0).astype(np.int64)


def _dataset(params):
  x, y = _examples()
  dataset = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
  if params['mode'] == 'train':
    dataset = dataset.repeat()
  return dataset.batch(params['batch_size'], drop_remainder=True)


def dataset_input_fn(params):
  """The Dataset the tensor input_fns below stand for."""
  return _dataset(params).map(lambda f, y: ({'x': 2.0 * f['x'] + 1.0}, y))


def tensor_input_fn(params):
  """get_next() of a one-shot iterator, with ops applied afterwards."""
  features, labels = v1.data.make_one_shot_iterator(
      _dataset(params)).get_next()
  return {'x': 2.0 * features['x'] + 1.0}, labels


def method_input_fn(params):
  """The DatasetV1 method form, labels as they come."""
  dataset = v1.data.Dataset.from_tensor_slices(
      (np.zeros([N, 4], np.float32), np.zeros([N], np.int64)))
  del params
  features, labels = dataset.batch(BATCH).make_one_shot_iterator().get_next()
  return {'x': features}, labels


def constant_input_fn(params):
  """Tensors made without an iterator: the same batch at every step."""
  x, y = _examples()
  return ({'x': tf.constant(2.0 * x[:params['batch_size']] + 1.0)},
          tf.constant(y[:params['batch_size']]))


def constant_dataset_input_fn(params):
  x, y = _examples()
  batch = params['batch_size']
  return tf.data.Dataset.from_tensors(
      ({'x': 2.0 * x[:batch] + 1.0}, y[:batch])).repeat()


def two_iterators_input_fn(params):
  a = v1.data.make_one_shot_iterator(_dataset(params)).get_next()
  b = v1.data.make_one_shot_iterator(_dataset(params)).get_next()
  return a[0], b[1]


def model_fn(features, labels, mode, params):
  del params
  # Fixed initial values: the runners seed unseeded initializers differently.
  w = v1.get_variable('w', initializer=np.linspace(
      -1, 1, 8, dtype=np.float32).reshape(4, 2))
  logits = tf.matmul(features['x'], w)
  spec = v1.estimator.tpu.TPUEstimatorSpec
  if mode == tf.estimator.ModeKeys.PREDICT:
    return spec(mode, predictions={'logits': logits})
  loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=labels, logits=logits))
  if mode == tf.estimator.ModeKeys.EVAL:
    return spec(mode, loss=loss, eval_metrics=(
        lambda labels, logits: {'accuracy': v1.metrics.accuracy(
            labels, tf.argmax(logits, 1))}, [labels, logits]))
  train_op = v1.train.GradientDescentOptimizer(0.5).minimize(
      loss, v1.train.get_global_step())
  return spec(mode, loss=loss, train_op=train_op)


def _train(tmp_path, name, input_fn, runner='tf2', steps=5, eval_steps=None):
  params = testutil.base_config(
      runner=runner, model_dir=str(tmp_path / name), seed=7,
      iterations_per_loop=2, train_batch_size=BATCH, eval_batch_size=BATCH,
      save_checkpoints_steps=100)
  trained = runners.make_runner(params, model_fn, input_fn)
  trained.train(steps)
  return (tf.train.load_variable(params.model_dir, 'w'),
          trained.evaluate(eval_steps))


def test_iterator_tensors_train_as_the_dataset_they_come_from(tmp_path):
  w_dataset, metrics_dataset = _train(tmp_path, 'dataset', dataset_input_fn)
  w_tensors, metrics_tensors = _train(tmp_path, 'tensors', tensor_input_fn)
  np.testing.assert_array_equal(w_tensors, w_dataset)
  assert metrics_tensors == metrics_dataset
  assert metrics_tensors['global_step'] == 5


@testutil.requires_estimator
def test_the_real_tpu_estimator_trains_the_same_on_the_tensors(tmp_path):
  w_tf2, metrics_tf2 = _train(tmp_path, 'tf2', tensor_input_fn)
  w_ref, metrics_ref = _train(tmp_path, 'ref', tensor_input_fn,
                              runner='estimator')
  np.testing.assert_allclose(w_tf2, w_ref, rtol=1e-6, atol=1e-7)
  assert metrics_tf2['accuracy'] == pytest.approx(metrics_ref['accuracy'])
  assert metrics_tf2['loss'] == pytest.approx(metrics_ref['loss'], rel=1e-5)


def test_tensors_without_an_iterator_are_the_same_batch_every_step(tmp_path):
  # Endless, as in TF1: evaluation needs a number of steps.
  w_dataset, metrics_dataset = _train(
      tmp_path, 'dataset', constant_dataset_input_fn, eval_steps=3)
  w_tensors, metrics_tensors = _train(
      tmp_path, 'tensors', constant_input_fn, eval_steps=3)
  np.testing.assert_array_equal(w_tensors, w_dataset)
  assert metrics_tensors == metrics_dataset


def test_dataset_method_form_and_features_only():
  dataset = input_tensors.input_dataset(lambda: method_input_fn({}))
  features, labels = next(iter(dataset))
  assert features['x'].shape == (BATCH, 4) and labels.shape == (BATCH,)

  def features_only():
    return v1.data.make_one_shot_iterator(
        tf.data.Dataset.range(6).batch(3)).get_next() * 10

  values = [v.numpy().tolist() for v in input_tensors.input_dataset(
      features_only)]
  assert values == [[0, 10, 20], [30, 40, 50]]  # Ends where the input does.


def test_two_iterators_are_refused_naming_the_alternative():
  with pytest.raises(input_tensors.InputFnTensorsError,
                     match='makes 2 iterators.*return the tf.data.Dataset'):
    input_tensors.input_dataset(
        lambda: two_iterators_input_fn({'mode': 'train', 'batch_size': 8}))


def test_two_replicas_evaluate_as_the_dataset(tmp_path):
  results = {}
  for name in ('dataset_input_fn', 'tensor_input_fn'):
    result = testutil.run_main(
        ['--runner=tf2', '--num_cpu_devices=2', f'--model={__name__}:model_fn',
         f'--input={__name__}:{name}', '--mode=train_and_evaluate',
         '--train_steps=4', '--steps_per_eval=4', '--eval_steps=0',
         '--iterations_per_loop=2', f'--train_batch_size={BATCH}',
         f'--eval_batch_size={BATCH}', f'--model_dir={tmp_path / name}'])
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'mirrored strategy, 2 replica(s)' in result.stderr
    results[name] = dict(re.findall(r'^(\w+): (\S+)$', result.stdout, re.M))
  assert results['tensor_input_fn'] == results['dataset_input_fn']
  assert results['tensor_input_fn']['global_step'] == '4'
