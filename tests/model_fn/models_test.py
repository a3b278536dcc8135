"""MLP and ResNet builders: shapes, variable names and parameter counts."""

import pytest
import tensorflow as tf

from model_fn import mlp
from model_fn import resnet
from tests import testutil

_v1 = tf.compat.v1

# Trainable parameters of the reference ImageNet models (1000 classes):
# conv weights without bias, batch-norm gamma and beta, the fc layer.
RESNET_IMAGENET_PARAMS = {
    18: 11_689_512,
    34: 21_797_672,
    50: 25_557_032,
    101: 44_549_160,
}


def _trainable_count():
  return sum(v.shape.num_elements() for v in _v1.trainable_variables())


def test_mlp_default_is_784_128_10():
  with tf.Graph().as_default():
    logits = mlp.mlp(tf.zeros([5, 28, 28, 1]), True, testutil.base_params(
        num_classes=10, mlp_hidden_units=[128]))
    assert logits.shape.as_list() == [5, 10]
    names = sorted(v.name for v in _v1.trainable_variables())
    assert names == ['mlp/dense1/bias:0', 'mlp/dense1/kernel:0',
                     'mlp/logits/bias:0', 'mlp/logits/kernel:0']
    assert _trainable_count() == 784 * 128 + 128 + 128 * 10 + 10


def test_mlp_depth_and_width_configurable():
  with tf.Graph().as_default():
    mlp.mlp(tf.zeros([2, 8, 8, 1]), True, testutil.base_params(
        num_classes=3, mlp_hidden_units=[32, 16, 8]))
    assert _trainable_count() == (64 * 32 + 32) + (32 * 16 + 16) + (
        16 * 8 + 8) + (8 * 3 + 3)


@pytest.mark.parametrize('depth', sorted(RESNET_IMAGENET_PARAMS))
def test_resnet_imagenet_parameter_count(depth):
  with tf.Graph().as_default():
    images = _v1.placeholder(tf.float32, [None, 224, 224, 3])
    logits = resnet.resnet(images, True, testutil.base_params(
        resnet_depth=depth, resnet_stem='auto', image_size=224,
        num_classes=1000))
    assert logits.shape.as_list() == [None, 1000]
    assert _trainable_count() == RESNET_IMAGENET_PARAMS[depth]


def test_resnet50_variable_names():
  with tf.Graph().as_default():
    resnet.resnet(_v1.placeholder(tf.float32, [None, 224, 224, 3]), True,
                  testutil.base_params(resnet_depth=50, resnet_stem='auto',
                                       image_size=224, num_classes=1000))
    names = {testutil.variable_name(v) for v in _v1.global_variables()}
  for expected in ('resnet50/stem/conv/kernel',
                   'resnet50/stem/batch_norm/gamma',
                   'resnet50/stem/batch_norm/moving_mean',
                   'resnet50/stage1/unit1/shortcut/conv/kernel',
                   'resnet50/stage4/unit3/conv3/batch_norm/beta',
                   'resnet50/logits/kernel'):
    assert expected in names, expected


def test_resnet_small_stem_keeps_resolution():
  with tf.Graph().as_default():
    params = testutil.base_params(resnet_depth=18, resnet_stem='auto',
                                  image_size=32, num_classes=10)
    assert resnet.stem_kind(params) == 'small'
    logits = resnet.resnet(tf.zeros([2, 32, 32, 3]), False, params)
    assert logits.shape.as_list() == [2, 10]
    stem = [v for v in _v1.trainable_variables()
            if v.name.startswith('resnet18/stem/conv/kernel')][0]
    assert stem.shape.as_list() == [3, 3, 3, 64]


def test_resnet_rejects_unknown_depth():
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match='resnet_depth'):
      resnet.resnet(tf.zeros([1, 32, 32, 3]), True, testutil.base_params(
          resnet_depth=42, image_size=32, num_classes=10))


def test_resnet_training_adds_batch_norm_updates():
  with tf.Graph().as_default():
    resnet.resnet(tf.zeros([2, 16, 16, 1]), True, testutil.base_params(
        resnet_depth=18, resnet_stem='auto', image_size=16, num_classes=4))
    updates = _v1.get_collection(_v1.GraphKeys.UPDATE_OPS)
    bn_layers = [v for v in _v1.global_variables()
                 if v.name.endswith('moving_mean:0')]
    assert len(updates) == 2 * len(bn_layers) > 0
