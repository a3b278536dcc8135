"""Native Keras models: same logits as the TF1 networks on the same weights."""

import os

os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

# pylint: disable=g-import-not-at-top,wrong-import-position
import numpy as np
import pytest
import tensorflow as tf

from model_fn.native import optimization
from model_fn.native import resnet as native_resnet
from tests import native_tf1
from tests import testutil
from trainer.models import builtin

# float32: same ops on the same weights.
F32_RTOL = 1e-5
# bfloat16 keeps 8 significant bits (relative step 2^-8); the two graphs may
# round a few intermediate results differently (fused matmul + bias in the
# TF1 session, not eagerly): allow 4 steps of the largest logit.
BF16_RTOL = 4 * 2.0 ** -8


def _params(model, **overrides):
  defaults = {'image_size': 8 if model == 'resnet' else 28,
              'resnet_depth': 18}
  return testutil.base_params(model=model, **dict(defaults, **overrides))


def _converted(params, tmp_path):
  """(TF1 run after 2 training steps, native model with its weights)."""
  from trainer.runners.native import convert  # pylint: disable=g-import-not-at-top
  from trainer.runtime import checkpoints  # pylint: disable=g-import-not-at-top
  batches = native_tf1.batches(params, 3)
  run = native_tf1.TF1Run(params, batches[0][0].shape)
  run.train(batches[:2])  # Batch-norm statistics and weights move off init.
  run.save(str(tmp_path / 'tf1'))
  path, _ = convert.convert(str(tmp_path / 'tf1'), params,
                            str(tmp_path / 'native'))
  model = builtin.build_native_model(params)
  optimizer = optimization.make_optimizer(params)
  optimizer.build(model.trainable_variables)
  checkpoints.make_checkpoint(model, optimizer).restore(
      path).assert_existing_objects_matched()
  return run, model, batches[2][0]


@pytest.mark.parametrize('model,precision,rtol', [
    ('mlp', 'float32', F32_RTOL), ('resnet', 'float32', F32_RTOL),
    ('mlp', 'bfloat16', BF16_RTOL), ('resnet', 'bfloat16', BF16_RTOL)])
def test_converted_weights_give_the_tf1_logits(tmp_path, model, precision,
                                               rtol):
  params = _params(model, precision=precision, optimizer='momentum')
  run, native, images = _converted(params, tmp_path)
  expected = run.logits(images)
  got = native(images, training=False).numpy()
  run.close()
  assert got.dtype == np.float32
  scale = np.abs(expected).max()
  print(f'{model} {precision}: max |dlogits| {np.abs(got - expected).max():.3g}'
        f' (max |logits| {scale:.3g})')
  np.testing.assert_allclose(got, expected, rtol=0, atol=rtol * scale)


def test_mixed_bfloat16_keeps_float32_variables_and_logits():
  params = _params('resnet', precision='bfloat16')
  model = builtin.build_native_model(params)
  assert model.dtype_policy.name == 'mixed_bfloat16'
  assert {v.dtype for v in model.variables} == {tf.float32}
  logits = model(tf.zeros([2, 8, 8, 1]), training=True)
  assert logits.dtype == tf.float32


@pytest.mark.parametrize('depth', [18, 34, 50, 101])
def test_every_depth_has_the_tf1_variables(depth):
  params = _params('resnet', resnet_depth=depth)
  graph = tf.Graph()
  with graph.as_default():
    native_tf1.NETWORKS['resnet'](tf.zeros([1, 8, 8, 1]), True, params)
    expected = {v.op.name: v.shape.as_list()
                for v in tf.compat.v1.global_variables()}
  model = builtin.build_native_model(params)
  got = {name: v.shape.as_list() for name, v in model.tf1_variables().items()}
  assert got == expected
  assert len(model.variables) == len(expected)  # Nothing unnamed.


def test_mlp_has_the_tf1_variables():
  params = _params('mlp', mlp_hidden_units=[16, 8])
  model = builtin.build_native_model(params)
  assert {n: v.shape.as_list() for n, v in model.tf1_variables().items()} == {
      'mlp/dense1/kernel': [784, 16], 'mlp/dense1/bias': [16],
      'mlp/dense2/kernel': [16, 8], 'mlp/dense2/bias': [8],
      'mlp/logits/kernel': [8, 10], 'mlp/logits/bias': [10]}


def test_zero_initialised_last_gamma_and_imagenet_stem():
  params = _params('resnet', image_size=64, resnet_stem='auto')
  model = builtin.build_native_model(params)
  names = model.tf1_variables()
  assert names['resnet18/stem/conv/kernel'].shape.as_list() == [7, 7, 1, 64]
  assert not np.any(names[
      'resnet18/stage1/unit1/conv2/batch_norm/gamma'].numpy())
  assert np.all(names['resnet18/stage1/unit1/conv1/batch_norm/gamma'].numpy()
                == 1.0)
  assert 'resnet18/stage1/unit1/shortcut/conv/kernel' not in names
  assert names['resnet18/stage2/unit1/shortcut/conv/kernel'].shape.as_list(
  ) == [1, 1, 64, 128]
  assert model(tf.zeros([1, 64, 64, 1])).shape == (1, 10)


def test_argument_errors_are_precise():
  with pytest.raises(ValueError, match=r'`depth` \(20\) must be one of'):
    native_resnet.ResNet(20, 10)
  with pytest.raises(ValueError, match="params\\['model'\\] must be one of"):
    builtin.build_native_model(_params('vgg'))
  with pytest.raises(ValueError, match="params\\['precision'\\]"):
    builtin.build_native_model(_params('mlp', precision='float16'))
