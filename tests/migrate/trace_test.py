"""trainer.migrate's trace, checkpoint plan and code templates, in process:
what it learns from a model_fn's train_op, what it refuses (one line naming
the construct), and the variables it will not leave unmapped."""

import ast

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.compat import v1_objects
from trainer.migrate import codegen
from trainer.migrate import convert
from trainer.migrate import facts as facts_lib
from trainer.migrate import trace

pytestmark = pytest.mark.skipif(testutil.HAS_ESTIMATOR,
                                reason='trainer.migrate needs TF >= 2.16')
v1 = tf.compat.v1


def _input_fn(params):
  x = np.arange(32, dtype=np.float32).reshape(8, 4) / 32
  y = np.arange(8, dtype=np.int64) % 2
  return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
      params['batch_size'])


def _model_fn(optimizer_fn, emas=0):
  def model_fn(features, labels, mode, params):
    del params
    logits = v1.layers.dense(features, 2, name='out')
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    step = v1.train.get_or_create_global_step()
    train_op = None
    if mode == 'train':
      train_op = optimizer_fn().minimize(loss, global_step=step)
      for i in range(emas):
        with tf.control_dependencies([train_op]):
          train_op = v1.train.ExponentialMovingAverage(
              0.9, name=f'ema{i}').apply()
    return v1.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op,
        predictions={'logits': logits})
  return model_fn


def _tracer(model_fn):
  params = testutil.base_params(model='m:model_fn', input='m:input_fn',
                                train_batch_size=4, eval_batch_size=4)
  return trace.Tracer(model_fn, {'train': _input_fn, 'eval': _input_fn,
                                 'infer': _input_fn}, params)


def test_learns_the_optimizer_its_slots_and_hyperparameters():
  facts = _tracer(_model_fn(lambda: v1.train.MomentumOptimizer(
      0.1, momentum=0.8, use_nesterov=True))).trace()
  optimizer = facts.optimizer
  assert (optimizer.v1_class, optimizer.keras_class) == (
      'MomentumOptimizer', 'V1Momentum')
  assert optimizer.hyperparameters == {'momentum': 0.8, 'use_nesterov': True}
  assert optimizer.learning_rate == pytest.approx(0.1)
  assert optimizer.slots['out/kernel'] == {'momentum': 'out/kernel/Momentum'}
  assert optimizer.steps_global_step
  roles = {v.name: v.role for v in facts.variables}
  assert roles == {'out/kernel': 'model', 'out/bias': 'model',
                   'global_step': 'global_step',
                   'out/kernel/Momentum': 'slot', 'out/bias/Momentum': 'slot'}


def test_a_custom_optimizer_stays_wrapped():
  class Custom(v1.train.GradientDescentOptimizer):
    pass

  facts = _tracer(_model_fn(lambda: Custom(0.1))).trace()
  assert facts.optimizer is None
  wrapped = ' '.join(c.construct for c in facts.of_kind('wrapped'))
  assert 'Custom' in wrapped


def test_refuses_two_moving_averages_in_one_line():
  tracer = _tracer(_model_fn(lambda: v1.train.AdamOptimizer(0.1), emas=2))
  with pytest.raises(trace.RefusedError) as raised:
    tracer.trace()
  message = str(raised.value)
  assert '\n' not in message
  assert message.startswith('the train_op applies 2 '
                            'ExponentialMovingAverages')


def test_an_unmapped_checkpoint_variable_is_named(tmp_path):
  facts = _tracer(_model_fn(lambda: v1.train.AdamOptimizer(0.1))).trace()
  with tf.Graph().as_default():
    names = [v.name for v in facts.variables] + ['stray/counter']
    for name in names:
      v1.get_variable(name, shape=[], initializer=v1.zeros_initializer(),
                      use_resource=True)
    with v1.Session() as session:
      session.run(v1.global_variables_initializer())
      path = v1.train.Saver().save(session, str(tmp_path / 'model.ckpt'))
  with pytest.raises(convert.CheckpointMappingError) as raised:
    convert.plan(facts, path)
  assert 'stray/counter' in str(raised.value)
  assert 'nothing was written' in str(raised.value)


@pytest.mark.parametrize('v1_class', sorted(facts_lib.CONVERTED_OPTIMIZERS))
def test_v1_optimizer_settings_are_read(v1_class):
  """The private attributes v1_objects reads hold the settings on this
  TensorFlow, for every optimizer the migration converts."""
  _, attributes = facts_lib.CONVERTED_OPTIMIZERS[v1_class]
  required = {'MomentumOptimizer': {'momentum': 0.5}}.get(v1_class, {})
  optimizer = getattr(v1.train, v1_class)(0.125, **required)
  assert v1_objects.attribute(optimizer, attributes['learning_rate']) == 0.125
  for attribute in attributes.values():
    assert not callable(v1_objects.attribute(optimizer, attribute))


def test_every_converted_optimizer_has_a_compiling_template():
  blocks = codegen._optimizer_blocks()  # pylint: disable=protected-access
  for v1_class, (keras_class, _) in facts_lib.CONVERTED_OPTIMIZERS.items():
    source = blocks[v1_class]
    tree = ast.parse(source)
    assert [n.name for n in tree.body if isinstance(n, ast.ClassDef)] == [
        keras_class]
