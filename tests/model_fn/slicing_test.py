"""Tensor slicing: sliced loss, gradients and updates equal the unsliced ones.

Each mode (batch, dense, logits) against the same model unsliced, from the
same weights and batch, in float32: in a TF1 graph, inside
tf.function(jit_compile=True) (XLA, static shapes), and one optimizer step.
Slice counts that do not divide the size (3 slices of 10 classes, of 8
examples, of 16 units) are used on purpose.
"""

import numpy as np
import pytest
import tensorflow as tf

from model_fn import models
from model_fn import slicing
from model_fn.spec import ModeKeys
from tests import testutil
from trainer import params as params_lib
from trainer.models import builtin

TOL = 1e-5
BATCH = 8
MODES = ('batch', 'dense', 'logits')


def _batch(params, seed=0):
  rng = np.random.RandomState(seed)
  size, channels = params['image_size'], params['image_channels']
  images = rng.rand(BATCH, size, size, channels).astype(np.float32)
  labels = rng.randint(0, params['num_classes'], BATCH).astype(np.int32)
  return images, labels


def _train_graph(model_fn, params, images, labels):
  """(loss, {name: grad}, train_op) of model_fn's TRAIN graph."""
  spec = model_fn({'image': tf.convert_to_tensor(images)},
                  tf.convert_to_tensor(labels),
                  ModeKeys.TRAIN, dict(params, batch_size=BATCH))
  variables = tf.compat.v1.trainable_variables()
  grads = tf.gradients(spec.loss, variables)
  names = [testutil.variable_name(v) for v in variables]
  return spec.loss, dict(zip(names, grads)), spec.train_op


def _run_graph(params, images, labels, weights=None, step=False):
  """loss, grads (and weights after one step) with the given start weights."""
  model_fn = builtin.model_fn(params['model'])
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(0)
    loss, grads, train_op = _train_graph(model_fn, params, images, labels)
    variables = {testutil.variable_name(v): v
                 for v in tf.compat.v1.global_variables()}
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      if weights:  # As Variable.load does, for every variable in one run.
        initializers = [variables[name].initializer for name in weights]
        sess.run(initializers, {op.inputs[1]: weights[name] for op, name in
                                zip(initializers, weights)})
      start = sess.run({n: variables[n] for n in grads})  # One run.
      loss_value, grad_values = sess.run([loss, grads])
      after = None
      if step:
        sess.run(train_op)
        after = sess.run({n: variables[n] for n in grads})
  return loss_value, grad_values, start, after


def _max_diff(a, b):
  assert set(a) == set(b)
  return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def _params(mode, **overrides):
  base = dict(mlp_hidden_units=[16, 12], num_classes=10, label_smoothing=0.1,
              optimizer='adam', model_dir=None)
  base.update(overrides)
  return (testutil.base_params(**base),
          testutil.base_params(num_slices=3, slice=mode, **base))


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('hidden', [[16], [16, 12]])
def test_graph_loss_gradients_and_step_equal_unsliced(mode, hidden):
  plain, sliced = _params(mode, mlp_hidden_units=hidden)
  images, labels = _batch(plain)
  loss0, grads0, weights, after0 = _run_graph(plain, images, labels,
                                              step=True)
  loss1, grads1, _, after1 = _run_graph(sliced, images, labels, weights,
                                        step=True)
  assert abs(loss0 - loss1) <= TOL
  assert _max_diff(grads0, grads1) <= TOL
  assert _max_diff(after0, after1) <= TOL
  # The step did something: weights moved.
  assert _max_diff(weights, after0) > 1e-4


def test_resnet_logits_slicing_equals_unsliced():
  plain, sliced = _params('logits', model='resnet', resnet_depth=18,
                          image_size=8, num_classes=7)
  images, labels = _batch(plain)
  loss0, grads0, weights, _ = _run_graph(plain, images, labels)
  loss1, grads1, _, _ = _run_graph(sliced, images, labels, weights)
  assert abs(loss0 - loss1) <= TOL
  assert _max_diff(grads0, grads1) <= TOL


def _xla_loss_and_grads(params, images, labels, weights):
  """Loss and grads of one TRAIN graph compiled with jit_compile=True."""
  model_fn = builtin.model_fn(params['model'])

  def step(x, y):
    loss, grads, _ = _train_graph(model_fn, params, x, y)
    names = sorted(grads)
    return [loss] + [grads[n] for n in names]

  shapes = [tf.TensorSpec(images.shape, tf.float32),
            tf.TensorSpec(labels.shape, tf.int32)]
  wrapped = tf.compat.v1.wrap_function(
      lambda x, y: step(x, y), shapes)  # pylint: disable=unnecessary-lambda
  for v in wrapped.variables:
    name = testutil.variable_name(v)
    if name in weights:
      v.assign(weights[name])
  names = sorted(weights)
  jitted = tf.function(lambda x, y: wrapped(x, y), jit_compile=True)
  values = [t.numpy() for t in jitted(images, labels)]
  return values[0], dict(zip(names, values[1:]))


@pytest.mark.parametrize('mode', MODES)
def test_xla_loss_and_gradients_equal_unsliced(mode):
  plain, sliced = _params(mode)
  images, labels = _batch(plain)
  _, _, weights, _ = _run_graph(plain, images, labels)
  loss0, grads0 = _xla_loss_and_grads(plain, images, labels, weights)
  loss1, grads1 = _xla_loss_and_grads(sliced, images, labels, weights)
  assert abs(loss0 - loss1) <= TOL
  assert _max_diff(grads0, grads1) <= TOL
  assert _max_diff(grads0, {k: 0 * v for k, v in grads0.items()}) > 1e-4


def test_slice_sizes():
  assert slicing.slice_sizes(10, 3) == [4, 3, 3]
  assert slicing.slice_sizes(8, 8) == [1] * 8
  with pytest.raises(ValueError, match='--num_slices'):
    slicing.slice_sizes(3, 4)
  with pytest.raises(ValueError, match='static'):
    slicing.slice_sizes(None, 2)


def test_num_slices_only_for_chosen_mode():
  params = testutil.base_params(num_slices=4, slice='dense')
  assert slicing.num_slices(params, 'dense') == 4
  assert slicing.num_slices(params, 'batch') == 1
  assert slicing.num_slices(testutil.base_params(), 'dense') == 1


@pytest.mark.parametrize('overrides, flag', [
    (dict(slice='batch', num_slices=8, train_batch_size=32, num_cores=8),
     '--slice=batch'),
    (dict(slice='dense', num_slices=2, model='resnet'), '--slice=dense'),
    (dict(slice='dense', num_slices=32, mlp_hidden_units=[16]),
     '--mlp_hidden_units'),
    (dict(slice='logits', num_slices=11), '--num_classes'),
])
def test_invalid_slicing_names_the_flag(overrides, flag):
  with pytest.raises(ValueError, match=flag):
    params_lib.validate_params(testutil.base_params(**overrides))


@testutil.requires_estimator
def test_batch_slicing_trains_under_tpu_estimator(tmp_path):
  from input_fn import inputs  # pylint: disable=g-import-not-at-top
  from trainer.runners.estimator import runner as estimator_runner  # pylint: disable=g-import-not-at-top
  params = testutil.base_config(model_dir=str(tmp_path), num_slices=4,
                                slice='batch', num_cores=1, train_steps=2)
  runner = estimator_runner.EstimatorRunner(
      params, models.mlp_model_fn, inputs.INPUT_FNS['tfrecord'])
  runner.train(2)
  assert runner.global_step() == 2
