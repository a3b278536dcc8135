"""tf.compat.v1.train.init_from_checkpoint anywhere in a model_fn, on 1 and 2
replicas, as under the real TPUEstimator (TF 2.15).

In TF1 the call only replaces initializers: a run whose model_dir has no
checkpoint starts from the source checkpoint's values (in any mode); one
that has a checkpoint restores it and never reads the source. Forms, each
mapping a partitioned source variable too:
  names:       called directly in every mode, a scope map and a name map,
               the source given as a directory;
  objects:     in a scaffold function the model_fn runs itself, after its
               optimizer and EMA exist, {name: variable object}, a file;
  scaffold_fn: the same function returned as the TPUEstimatorSpec's
               scaffold_fn (run after the model_fn), a name map.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.runners import registry as runners

v1 = tf.compat.v1
N, BATCH = 32, 8
FORMS = ('names', 'objects', 'scaffold_fn')


def _examples():
  rng = np.random.RandomState(11)
  x = rng.uniform(-1, 1, size=(N, 4)).astype(np.float32)
  return x, (x[:, 2] + x[:, 3] > 0).astype(np.int64)


def input_fn(params):
  x, y = _examples()
  dataset = tf.data.Dataset.from_tensor_slices(({'x': x}, y))
  if params['mode'] == 'train':
    dataset = dataset.repeat()
  return dataset.batch(params['batch_size'], drop_remainder=True)


def write_source(directory):
  """A TF1 checkpoint (src/w, src/b, and src/part in 2 partitions) under
  `directory`; its file prefix."""
  rng = np.random.RandomState(2)
  with tf.Graph().as_default(), v1.Session() as session:
    v1.get_variable('src/w', initializer=rng.normal(size=(4, 2)).astype(
        np.float32))
    v1.get_variable('src/b', initializer=np.float32([0.3, -0.3]))
    v1.get_variable('src/part', shape=(4, 2), partitioner=(
        v1.fixed_size_partitioner(2)), initializer=(
            v1.random_normal_initializer(seed=1)))
    v1.get_variable('src/unused', initializer=1.0)
    session.run(v1.global_variables_initializer())
    return v1.train.Saver().save(session, os.path.join(directory, 'src'))


def _model_fn(form, source_file):
  source_dir = os.path.dirname(source_file)

  def model_fn(features, labels, mode, params):
    del params
    w = v1.get_variable('dense/w', initializer=np.linspace(
        -1, 1, 8, dtype=np.float32).reshape(4, 2))
    b = v1.get_variable('dense/b', initializer=np.float32([0.0, 0.0]))
    v = v1.get_variable('other/v', initializer=np.linspace(
        1, -1, 8, dtype=np.float32).reshape(4, 2))
    logits = features['x'] @ w + b + tf.nn.relu(features['x']) @ v
    if form == 'names':
      v1.train.init_from_checkpoint(source_dir, {'src/': 'dense/',
                                                 'src/part': 'other/v'})

    def scaffold():
      if form == 'objects':
        v1.train.init_from_checkpoint(source_file, {
            'src/w': w, 'src/b': b, 'src/part': v})
      else:
        v1.train.init_from_checkpoint(source_file, {
            'src/w': 'dense/w', 'src/b': 'dense/b', 'src/part': 'other/v'})
      return v1.train.Scaffold()

    spec = v1.estimator.tpu.TPUEstimatorSpec
    scaffold_fn = scaffold if form == 'scaffold_fn' else None
    ema = v1.train.ExponentialMovingAverage(0.9)
    if mode == tf.estimator.ModeKeys.PREDICT:
      if form == 'objects':
        scaffold()
      return spec(mode, predictions={'logits': logits},
                  scaffold_fn=scaffold_fn)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    if mode == tf.estimator.ModeKeys.EVAL:
      if form == 'objects':
        scaffold()
      return spec(mode, loss=loss, scaffold_fn=scaffold_fn)
    train_op = v1.train.MomentumOptimizer(0.2, 0.9).minimize(
        loss, v1.train.get_global_step())
    with tf.control_dependencies([train_op]):
      train_op = ema.apply(v1.trainable_variables())
    if form == 'objects':  # Optimizer slots and EMA shadows exist now.
      scaffold()
    return spec(mode, loss=loss, train_op=train_op, scaffold_fn=scaffold_fn)

  return model_fn


def _runner(model_dir, form, source, runner='tf2', replicas=1):
  params = testutil.base_config(
      runner=runner, model_dir=model_dir, seed=5, num_cpu_devices=replicas,
      iterations_per_loop=2, train_batch_size=BATCH, eval_batch_size=BATCH,
      save_checkpoints_steps=100)
  return runners.make_runner(params, _model_fn(form, source), input_fn)


def _logits(values):
  """The model's logits in numpy from {name: value}."""
  x, _ = _examples()
  return (x @ values['w'] + values['b'] +
          np.maximum(x, 0) @ values['v'])


def _checkpoint_values(path):
  return {key: tf.train.load_variable(path, name) for key, name in
          (('w', 'dense/w'), ('b', 'dense/b'), ('v', 'other/v'))}


def _source_values(source):
  return {key: tf.train.load_variable(source, name) for key, name in
          (('w', 'src/w'), ('b', 'src/b'), ('v', 'src/part'))}


def _predict(runner):
  return np.stack([p['logits'] for p in runner.predict()])


def run(form, source, work, runner, replicas, part):
  """What a user observes, saved to WORK/RUNNER_PART.npz. part 'trained':
  the step-0 and final checkpoints of train(2) then train(4), then
  evaluate() and predict() of that model_dir; 'fresh': predict() on an
  empty model_dir. (One runner per process: two MirroredStrategy runners
  in one process collide on collective instance keys.)"""
  model_dir = os.path.join(work, f'{runner}_{part}')
  model = _runner(model_dir, form, source, runner, replicas)
  result = {}
  if part == 'trained':
    model.train(2)
    model.train(4)
    start = _checkpoint_values(os.path.join(model_dir, 'model.ckpt-0'))
    result.update({f'start/{k}': v for k, v in start.items()})
    end = _checkpoint_values(model_dir)
    result.update({f'end/{k}': v for k, v in end.items()})
    metrics = model.evaluate(None)
    result.update(loss=metrics['loss'], global_step=metrics['global_step'])
  result['predictions'] = _predict(model)
  if part == 'fresh':
    assert tf.train.latest_checkpoint(model_dir) is None
  np.savez(model_dir + '.npz', **result)


def _observed(form, source, work, runner='tf2', replicas=1):
  """{'trained': ..., 'fresh': ...} of run() on `replicas` CPU devices."""
  observed = {}
  for part in ('trained', 'fresh'):
    testutil.call_on_cpu_devices(replicas, run, form, source, work, runner,
                                 replicas, part)
    with np.load(os.path.join(work, f'{runner}_{part}.npz')) as saved:
      observed[part] = dict(saved)
  return observed


@pytest.fixture(name='reference', scope='module')
def _reference(tmp_path_factory):
  """{form: (source checkpoint, what the real TPUEstimator gives, or None
  without one)}, computed once per form."""
  cache = {}

  def reference(form):
    if form not in cache:
      work = str(tmp_path_factory.mktemp(f'reference_{form}'))
      source = write_source(work)
      cache[form] = (source, _observed(form, source, work, 'estimator')
                     if testutil.HAS_ESTIMATOR else None)
    return cache[form]

  return reference


@pytest.mark.parametrize('replicas', [1, 2])
@pytest.mark.parametrize('form', FORMS)
def test_init_from_checkpoint(form, replicas, reference, tmp_path):
  """The tf2 runner on `replicas` replicas, against the source checkpoint's
  values and (on TF 2.15) the real TPUEstimator."""
  source, expected = reference(form)
  got = _observed(form, source, str(tmp_path), replicas=replicas)
  trained, initial = got['trained'], _source_values(source)
  for key, value in initial.items():  # Started from the source...
    np.testing.assert_array_equal(trained[f'start/{key}'], value,
                                  err_msg=key)
  assert not np.allclose(trained['end/w'], initial['w'])  # ...and trained.
  assert trained['global_step'] == 4
  # A model_dir with a checkpoint restores it; one without initialises.
  end = {key: trained[f'end/{key}'] for key in initial}
  np.testing.assert_allclose(trained['predictions'], _logits(end),
                             rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(got['fresh']['predictions'], _logits(initial),
                             rtol=1e-5, atol=1e-5)
  if expected is None:
    return
  for key, value in expected['trained'].items():
    np.testing.assert_allclose(trained[key], value, rtol=1e-5, atol=1e-5,
                               err_msg=key)
  np.testing.assert_allclose(got['fresh']['predictions'],
                             expected['fresh']['predictions'], rtol=1e-5,
                             atol=1e-5)


def test_names_resolve_against_the_call_not_other_modes(tmp_path):
  """A scope map sees the variables of the model_fn call, as TF1's graph
  of that mode: not the optimizer slots an earlier TRAIN trace made (the
  source has no `src/w/Momentum`)."""
  source = write_source(str(tmp_path))
  model = _runner(str(tmp_path / 'model'), 'names', source)
  model.train(1)
  result = model.evaluate(None)
  assert result['global_step'] == 1


def test_a_missing_tensor_fails_as_in_tf1(tmp_path):
  source = write_source(str(tmp_path))

  def model_fn(features, labels, mode, params):
    del labels, params
    w = v1.get_variable('dense/w', shape=(4, 2))
    v1.train.init_from_checkpoint(source, {'src/missing': 'dense/w'})
    return v1.estimator.tpu.TPUEstimatorSpec(
        mode, predictions={'logits': features['x'] @ w})

  params = testutil.base_config(runner='tf2', model_dir=str(tmp_path / 'm'),
                                eval_batch_size=BATCH)
  with pytest.raises(ValueError, match='src/missing'):
    list(runners.make_runner(params, model_fn, input_fn).predict())
