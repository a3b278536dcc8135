"""A tf.summary (v2) writer made inside the model_fn, as SimCLR's model.py
makes one in TRAIN, writes the same events under both runners.

The model_fn creates `create_file_writer(model_dir)`, puts `writer.init()`
in a control dependency, records when global_step % 3 == 0 and puts
`all_v2_summary_ops()` in the train_op's dependencies.
"""

import gc
import glob
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.compat import tf1_semantics
from trainer.runners import registry as runners
from trainer.engines.tf2 import summaries

v1 = tf.compat.v1
tf2 = tf.compat.v2
RUNNERS = [pytest.param('estimator', marks=testutil.requires_estimator), 'tf2']
EVERY = 3


def input_fn(params):
  x = np.random.RandomState(0).uniform(size=(64, 4)).astype(np.float32)
  y = x.sum(axis=1)
  return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
      params['batch_size'], drop_remainder=True)


def model_fn(features, labels, mode, params):
  w = v1.get_variable('w', [4, 1], initializer=v1.zeros_initializer())
  loss = tf.reduce_mean(tf.square(tf.matmul(features, w)[:, 0] - labels))
  step = v1.train.get_global_step()
  writer = tf2.summary.create_file_writer(params['model_dir'])
  with tf.control_dependencies([writer.init()]):
    with writer.as_default():
      should_record = tf.equal(tf.math.floormod(step, EVERY), 0)
      with tf2.summary.record_if(should_record):
        tf2.summary.scalar('seen_step', tf.cast(step, tf.float32), step=step)
        tf2.summary.scalar('train_loss', loss, step=step)
  with tf.control_dependencies(v1.summary.all_v2_summary_ops()):
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=step)
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _writer_events(model_dir):
  """{tag: [(step, value)]} of the model_fn writer's files (`.v2`)."""
  events = {}
  for path in glob.glob(os.path.join(model_dir, 'events.out.tfevents.*.v2')):
    for event in v1.train.summary_iterator(path):
      for value in event.summary.value:
        number = float(tf.make_ndarray(value.tensor)) if value.HasField(
            'tensor') else value.simple_value
        events.setdefault(value.tag, []).append((event.step, number))
  return {tag: sorted(values) for tag, values in events.items()}


def _train(tmp_path, kind, steps):
  model_dir = str(tmp_path / kind)
  params = testutil.base_config(
      model_dir=model_dir, runner=kind, iterations_per_loop=4,
      train_steps=steps, save_checkpoints_steps=steps, train_batch_size=8)
  runner = runners.make_runner(params, model_fn, input_fn)
  runner.train(steps)
  return _writer_events(model_dir)  # On disk when train() returns.


@pytest.mark.parametrize('kind', RUNNERS)
def test_model_fn_writer_records_at_the_steps_estimator_does(tmp_path, kind):
  events = _train(tmp_path, kind, 8)
  assert sorted(events) == ['seen_step', 'train_loss']
  # The step's global step before its update: 0, 3, 6 of steps 0..7.
  assert events['seen_step'] == [(0, 0.0), (3, 3.0), (6, 6.0)]
  assert [s for s, _ in events['train_loss']] == [0, 3, 6]
  loss = [v for _, v in events['train_loss']]
  assert loss[0] > loss[1] > loss[2] > 0  # Written as training goes on.


@testutil.requires_estimator
def test_model_fn_writer_values_equal_estimators(tmp_path):
  """Same model, input and zero initialisation: the same losses."""
  expected = _train(tmp_path, 'estimator', 7)
  got = _train(tmp_path, 'tf2', 7)
  assert got.keys() == expected.keys()
  for tag in expected:
    assert [s for s, _ in got[tag]] == [s for s, _ in expected[tag]]
    np.testing.assert_allclose([v for _, v in got[tag]],
                               [v for _, v in expected[tag]], rtol=1e-5)


def test_writer_in_a_compiled_step_is_refused(tmp_path):
  params = testutil.base_config(
      model_dir=str(tmp_path / 'm'), runner='tf2', jit_compile='on',
      train_batch_size=8)
  runner = runners.make_runner(params, model_fn, input_fn)
  with pytest.raises(summaries.CompiledStepError,
                     match='makes tf.summary writes.*--jit_compile=off'):
    runner.train(2)


def test_writer_made_in_a_trace_inits_and_lives_with_its_graph(tmp_path):
  @tf.function(autograph=False)
  def step(x):
    with tf1_semantics.graph_semantics():
      writer = tf2.summary.create_file_writer(str(tmp_path))
      with tf.control_dependencies([writer.init()]):  # None without the fix.
        with writer.as_default():
          tf2.summary.scalar('x', x, step=tf.cast(x, tf.int64))
    return x

  step(tf.constant(1.0))
  gc.collect()  # The model_fn's writer object is gone; the trace runs on.
  step(tf.constant(2.0))
  events = _writer_events(str(tmp_path))
  assert events == {'x': [(1, 1.0), (2, 2.0)]}
