"""TF1 idioms inside a model_fn traced by the tf2 runner's adapter behave as
in the TF1 graph TPUEstimator builds: each test runs one model_fn written the
legacy way both in a tf.compat.v1 Graph (the reference) and through
ModelFnModule in tf.function, on one device and on two replicas."""

import numpy as np
import pytest
import tensorflow as tf

from tests import testutil
from trainer.compat import tf1_semantics
from trainer.compat import tf_private
from trainer.engines.tf2 import model_fn_adapter
from trainer.runtime import strategy as strategy_lib

v1 = tf.compat.v1
TRAIN, EVAL = 'train', 'eval'
# At import, as tf_private_test does: pytest imports every module before
# any test initialises TensorFlow's devices.
strategy_lib.split_cpu(2)


def _strategy(replicas):
  if replicas == 1:
    return tf.distribute.get_strategy()
  return tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])


def get_ema_vars():
  """As tensorflow/tpu's resnet and efficientnet write it."""
  ema_vars = v1.trainable_variables() + v1.get_collection('moving_vars')
  for v in v1.global_variables():
    if 'moving_mean' in v.name or 'moving_variance' in v.name:
      ema_vars.append(v)
  return list(set(ema_vars))


RECORD = {}


def legacy_model_fn(features, labels, mode, params):
  """EMA, sets of variables, v.op.name maps, name-filtered collections."""
  del params
  net = v1.layers.dense(features, 8, activation=tf.nn.relu, name='hidden')
  net = v1.layers.batch_normalization(net, training=(mode == TRAIN))
  logits = v1.layers.dense(net, 3, name='logits')
  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  weights = [v for v in v1.trainable_variables() if 'kernel' in v.name]
  loss += 1e-4 * tf.add_n([tf.nn.l2_loss(v) for v in weights])
  global_step = v1.train.get_global_step()
  ema = v1.train.ExponentialMovingAverage(0.9, num_updates=global_step)
  ema_vars = get_ema_vars()
  RECORD['op_names'] = sorted(v.op.name for v in ema_vars)
  RECORD['by_variable'] = {v: v.op.name for v in v1.global_variables()}
  if mode == TRAIN:
    optimizer = v1.train.MomentumOptimizer(0.1, 0.9)
    with tf.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
      train_op = optimizer.minimize(loss, global_step)
    with tf.control_dependencies([train_op]):
      train_op = ema.apply(ema_vars)
    return loss, train_op
  RECORD['restore'] = ema.variables_to_restore(ema_vars)
  return loss, None


def _batch():
  rng = np.random.RandomState(0)
  return (rng.normal(size=(4, 5)).astype(np.float32),
          np.array([0, 1, 2, 1], np.int32))


def _graph_reference(model_fn, steps):
  """Losses and variable names of `steps` TF1 training steps in a Graph."""
  features, labels = _batch()
  with tf.Graph().as_default():
    v1.set_random_seed(0)
    v1.train.get_or_create_global_step()
    loss, train_op = model_fn(tf.constant(features), tf.constant(labels),
                              TRAIN, {})
    names = sorted(v.op.name for v in v1.global_variables())
    with v1.Session() as session:
      session.run(v1.global_variables_initializer())
      initial = {v.op.name: session.run(v) for v in v1.global_variables()}
      losses = [session.run([loss, train_op])[0] for _ in range(steps)]
  return names, initial, losses


def _traced(model_fn, steps, replicas=1, initial=None):
  """The same through ModelFnModule in tf.function; (module, losses)."""
  features, labels = _batch()
  strategy = _strategy(replicas)
  with strategy.scope():
    module = model_fn_adapter.ModelFnModule(
        lambda features, labels, mode, params: _as_spec(
            model_fn(features, labels, mode, params), mode))

  def replica_step(x, y):
    spec = module(x, y, TRAIN, {})
    with tf.control_dependencies([spec.train_op]):
      return tf.identity(spec.loss)

  @tf.function(autograph=False)
  def step():
    per_replica = strategy.run(replica_step, args=(features, labels))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, None)

  losses = []
  with strategy.scope(), module.creation_scope(), (
      tf_private.estimator_loss_scaling(strategy)):
    step.get_concrete_function()
    if initial:
      for name, variable in module.variables_by_name().items():
        variable.assign(initial[name])
    for _ in range(steps):
      losses.append(float(step()))
  return module, losses


class _Spec:

  def __init__(self, loss, train_op):
    self.loss, self.train_op = loss, train_op


def _as_spec(result, mode):
  del mode
  return _Spec(*result)


@pytest.mark.parametrize('replicas', [1, 2])
def test_ema_sets_and_op_names_train_as_in_a_tf1_graph(replicas):
  names, initial, reference = _graph_reference(legacy_model_fn, steps=3)
  module, losses = _traced(legacy_model_fn, 3, replicas, initial)
  assert sorted(module.variables_by_name()) == names
  assert 'hidden/kernel/ExponentialMovingAverage' in names
  assert RECORD['op_names'][0] == 'batch_normalization/beta'
  assert all(name == testutil.variable_name(v)
             for v, name in RECORD['by_variable'].items())
  np.testing.assert_allclose(losses, reference, rtol=1e-5)


def test_ema_variables_to_restore_maps_shadow_names_to_model_variables():
  module, _ = _traced(legacy_model_fn, 2)

  @tf.function(autograph=False)
  def evaluate():
    return module(*_batch(), EVAL, {}).loss

  with module.creation_scope():
    evaluate.get_concrete_function()
  restore = RECORD['restore']
  variables = module.variables_by_name()
  assert restore['hidden/kernel/ExponentialMovingAverage'] is (
      variables['hidden/kernel'])
  assert restore['global_step'] is variables['global_step']


def test_variables_hash_only_inside_the_scope():
  variable = tf.Variable(1.0)
  with tf1_semantics.graph_semantics():
    assert variable in {variable}
    assert variable.op.name == testutil.variable_name(variable)
  with pytest.raises(TypeError, match='unhashable'):
    hash(variable)


def test_saver_made_in_a_trace_builds_nothing_until_asked(tmp_path):
  variable = tf.Variable([1.0, 2.0], name='w')
  made = {}

  @tf.function(autograph=False)
  def traced():
    with tf1_semantics.graph_semantics():
      made['saver'] = v1.train.Saver({'renamed/w': variable})
    return variable.read_value()

  traced()  # Would raise if a RestoreV2 op of a missing file ran inside.
  saver = tf1_semantics.eager_saver(made['saver'])
  path = saver.save(None, str(tmp_path / 'model.ckpt'))
  assert tf.train.load_checkpoint(path).get_variable_to_shape_map() == {
      'renamed/w': [2]}


def keras_and_layers_model_fn(features, labels, mode, params):
  """A Keras layer and a compat.v1 layer that collide on the name 'dense'."""
  del params
  hidden = tf.keras.layers.Dense(4)(features)  # Keras: 'dense'.
  logits = v1.layers.dense(hidden, 3)  # get_variable: 'dense' again.
  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = v1.train.AdamOptimizer(0.01).minimize(
      loss, v1.train.get_global_step()) if mode == TRAIN else None
  return loss, train_op


def test_colliding_keras_and_v1_layer_names_map_as_in_tf1():
  names, initial, reference = _graph_reference(keras_and_layers_model_fn, 3)
  module, losses = _traced(keras_and_layers_model_fn, 3, initial=initial)
  shapes = {n: v.shape.as_list() for n, v in module.variables_by_name().items()}
  assert sorted(shapes) == names
  assert shapes['dense/kernel'] == list(initial['dense/kernel'].shape) == [5, 4]
  assert shapes['dense/kernel_1'] == [4, 3]
  np.testing.assert_allclose(losses, reference, rtol=1e-5)


def dropout_model_fn(features, labels, mode, params):
  """Random ops of every kind a legacy model_fn uses."""
  del params
  training = mode == TRAIN
  net = v1.layers.dense(features, 16, name='d')
  net = v1.layers.dropout(net, 0.5, training=training)
  net = tf.nn.dropout(net, rate=0.3) if training else net
  net = tf.keras.layers.Dropout(0.2)(net, training=training)
  noise = v1.random_uniform([16]) if training else 1.0
  logits = v1.layers.dense(net * noise, 3, name='logits')
  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, v1.train.get_global_step()) if training else None
  return loss, train_op


def test_random_ops_draw_the_same_numbers_as_in_the_tf1_graph():
  from trainer.compat import op_seeds  # pylint: disable=g-import-not-at-top

  def seeded(features, labels, mode, params):
    with op_seeds.derived_op_seeds():  # What the estimator runner does.
      return dropout_model_fn(features, labels, mode, params)

  _, initial, reference = _graph_reference(seeded, steps=4)
  tf.random.set_seed(0)
  _, losses = _traced(dropout_model_fn, 4, initial=initial)
  assert len(set(np.round(reference, 6))) == 4  # Each step draws anew.
  np.testing.assert_allclose(losses, reference, rtol=1e-6)
