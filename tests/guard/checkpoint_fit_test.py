"""trainer/guard/checkpoint_fit.py on tiny checkpoints, in-process: what it
refuses (shape, dtype, a variable the checkpoint lacks), what it lets
through as the Saver would (partitions, bfloat16_scope, extra checkpoint
variables, reshape=True, object-based checkpoints), and that a checked
restore restores exactly what an unchecked one does."""

import os

import numpy as np
import pytest
import tensorflow as tf

from trainer.guard import checkpoint_fit

v1 = tf.compat.v1
MismatchError = checkpoint_fit.CheckpointMismatchError


def _graph(shape=(10, 4), parts=1, dtype=tf.float32, extra=False,
           optimizer=True, bfloat16=False):
  """A graph of global_step, x (shape, dtype, in `parts` partitions), b [3]
  (made under bfloat16_scope if `bfloat16`), a Momentum step over both."""
  graph = tf.Graph()
  with graph.as_default():
    step = v1.train.get_or_create_global_step()
    partitioner = v1.fixed_size_partitioner(parts) if parts > 1 else None
    x = v1.get_variable('x', shape, dtype=dtype, partitioner=partitioner)
    if bfloat16:
      with v1.tpu.bfloat16_scope():
        b = v1.get_variable('b', [3])
    else:
      b = v1.get_variable('b', [3])
    if extra:
      v1.get_variable('extra', [2])
    loss = tf.reduce_sum(tf.cast(x, tf.float32)) + tf.reduce_sum(
        tf.cast(b, tf.float32))
    if optimizer:
      v1.train.MomentumOptimizer(0.1, 0.9).minimize(loss, step)
  return graph


def _save(directory, graph):
  with graph.as_default(), v1.Session() as session:
    session.run(v1.global_variables_initializer())
    return v1.train.Saver().save(session, os.path.join(directory, 'model.ckpt'),
                                 global_step=3)


@pytest.fixture(scope='module')
def checkpoint(tmp_path_factory):
  """model.ckpt-3 of _graph(): x [10, 4] in 2 parts, b [3], their slots."""
  return _save(str(tmp_path_factory.mktemp('ckpt')), _graph(parts=2))


def _check(graph, path):
  with graph.as_default():
    checkpoint_fit.check_saver(None, path)


def test_the_model_it_was_written_by_fits(checkpoint):
  _check(_graph(parts=2), checkpoint)
  _check(_graph(parts=2, optimizer=False), checkpoint)  # Evaluation's graph.
  _check(_graph(parts=3), checkpoint)  # Other slices of the same tensor.
  _check(_graph(parts=1), checkpoint)


def test_every_variable_of_another_shape_is_named_with_both(checkpoint):
  with pytest.raises(MismatchError) as raised:
    _check(_graph(shape=(12, 4), parts=2), checkpoint)
  message = str(raised.value)
  first, *rest = message.splitlines()
  # The first line: cause (variable, both shapes, path) and the fix.
  assert first.startswith(f'checkpoint {checkpoint} does not fit the model: '
                          'x is [10, 4] float32 there and [12, 4] float32 in '
                          'the model. Nothing was restored.')
  assert 'use a new model_dir' in first
  assert f"WarmStartSettings('{checkpoint}'" in first
  assert f'--init_checkpoint={checkpoint}' in first
  # Partitioned: the full shape; its Momentum slot under it.
  assert rest == ['  x: [10, 4] float32 in the checkpoint, [12, 4] float32 '
                  'in the model (and its optimizer slot x/Momentum)']
  assert raised.value.missing == []
  assert [key for key, _, _ in raised.value.mismatched] == ['x', 'x/Momentum']
  assert isinstance(raised.value, ValueError)


def test_a_variable_of_another_dtype_is_named(checkpoint):
  with pytest.raises(MismatchError) as raised:
    _check(_graph(parts=2, dtype=tf.float64, optimizer=False), checkpoint)
  assert ('  x: [10, 4] float32 in the checkpoint, [10, 4] float64 in the '
          'model') in str(raised.value).splitlines()


def test_a_variable_the_checkpoint_lacks_is_named_and_extra_ones_are_fine(
    checkpoint, tmp_path):
  with pytest.raises(MismatchError) as raised:
    _check(_graph(parts=2, extra=True), checkpoint)
  assert 'extra is not in it.' in str(raised.value).splitlines()[0]
  assert '  extra: not in the checkpoint' in str(raised.value).splitlines()
  assert raised.value.missing == ['extra']
  bigger = _save(str(tmp_path), _graph(extra=True))
  _check(_graph(), bigger)  # The checkpoint's own `extra` is not needed.


def test_a_checkpoint_of_another_model_says_so(checkpoint):
  graph = tf.Graph()
  with graph.as_default():
    v1.get_variable('other/kernel', [2, 2])
  with pytest.raises(MismatchError, match="none of the model's 1 variables is "
                     r'in it \(e.g. other/kernel\): it holds another model'):
    _check(graph, checkpoint)


def test_bfloat16_scope_variables_are_compared_as_the_float32_stored(
    tmp_path):
  path = _save(str(tmp_path), _graph(bfloat16=True))
  assert dict(tf.train.list_variables(path))['b'] == [3]
  assert tf.train.load_checkpoint(path).get_variable_to_dtype_map()[
      'b'] == tf.float32
  _check(_graph(bfloat16=True), path)
  _check(_graph(), path)


def test_a_checked_restore_restores_what_an_unchecked_one_does(tmp_path):
  graph = _graph(parts=2)
  with graph.as_default(), v1.Session() as session:
    session.run(v1.global_variables_initializer())
    session.run([v.assign(tf.fill(tf.shape(v), 0.25))
                 for v in v1.global_variables() if v.dtype == tf.float32])
    path = v1.train.Saver().save(session, str(tmp_path / 'model.ckpt'))
  values = []
  for checked in (False, True):
    graph = _graph(parts=2)
    with graph.as_default(), v1.Session() as session:
      saver = v1.train.Saver()
      if checked:
        with checkpoint_fit.checking_restores():
          saver.restore(session, path)
      else:
        saver.restore(session, path)
      values.append(session.run({v.op.name: v for v in v1.global_variables()}))
  assert values[0].keys() == values[1].keys()
  for name in values[0]:
    np.testing.assert_array_equal(values[0][name], values[1][name])
  assert np.all(values[1]['x/part_0'] == 0.25)


def test_checking_restores_checks_every_saver_restore_in_it(checkpoint):
  original = v1.train.Saver.restore
  graph = _graph(shape=(12, 4))
  with graph.as_default(), v1.Session() as session:
    saver = v1.train.Saver()
    with checkpoint_fit.checking_restores():
      with checkpoint_fit.checking_restores():  # Re-entrant.
        pass
      with pytest.raises(MismatchError, match='x is'):
        saver.restore(session, checkpoint)
    assert v1.train.Saver.restore is original  # Left as it was.
    # Outside: TF's own restore, which does not check resource shapes.
    saver.restore(session, checkpoint)
    x, = [v for v in v1.global_variables() if v.op.name == 'x']
    assert session.run(x).shape == (10, 4)  # Into the [12, 4] variable.


def test_a_reshaping_saver_accepts_as_many_elements(checkpoint):
  graph = _graph(shape=(20, 2), optimizer=False)
  with graph.as_default():
    checkpoint_fit.check_saver(v1.train.Saver(reshape=True), checkpoint)
    with pytest.raises(MismatchError):
      checkpoint_fit.check_saver(v1.train.Saver(), checkpoint)


def test_eager_variables_by_name_as_the_tf2_runner_restores(checkpoint):
  fits = {'x': tf.Variable(tf.zeros([10, 4])), 'b': tf.Variable([1., 2, 3])}
  checkpoint_fit.check_var_list(fits, checkpoint)
  with pytest.raises(MismatchError, match=r'b is \[3\] float32 there and '
                     r'\[4\] float32'):
    checkpoint_fit.check_var_list(
        dict(fits, b=tf.Variable(tf.zeros([4]))), checkpoint)


def test_an_object_based_checkpoint_through_its_recorded_names(tmp_path):
  variable = tf.Variable(tf.zeros([5]), name='w')
  path = tf.train.Checkpoint(weights=variable).save(str(tmp_path / 'ckpt'))
  checkpoint_fit.check({'w': ((5,), tf.float32)}, path)
  with pytest.raises(MismatchError, match=r'w is \[5\] float32 there and '
                     r'\[6\] float32'):
    checkpoint_fit.check({'w': ((6,), tf.float32)}, path)


def test_an_unreadable_checkpoint_is_left_to_the_restore(tmp_path):
  checkpoint_fit.check({'x': ((1,), tf.float32)}, str(tmp_path / 'none'))
