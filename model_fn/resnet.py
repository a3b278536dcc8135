"""ResNet v1.5 (stride in the 3x3 convolution of bottleneck blocks).

Built only on model_fn.layers, so variables are created with get_variable and
the network runs in float32 or under bfloat16_scope unchanged.
"""

import tensorflow as tf

from model_fn import layers

# depth -> (block kind, units per stage)
RESNET_SPECS = {
    18: ('basic', (2, 2, 2, 2)),
    34: ('basic', (3, 4, 6, 3)),
    50: ('bottleneck', (3, 4, 6, 3)),
    101: ('bottleneck', (3, 4, 23, 3)),
}
_STAGE_FILTERS = (64, 128, 256, 512)
IMAGENET_STEM_MIN_SIZE = 64


def _conv_bn(x, filters, kernel_size, strides, is_training, name, relu=True,
             zero_gamma=False):
  with tf.compat.v1.variable_scope(name):
    x = layers.conv2d(x, filters, kernel_size, strides, name='conv')
    x = layers.batch_norm(x, is_training, zero_gamma=zero_gamma)
  return tf.nn.relu(x) if relu else x


def _shortcut(x, filters, strides, is_training):
  if x.shape[-1] == filters and strides == 1:
    return x
  return _conv_bn(x, filters, 1, strides, is_training, 'shortcut', relu=False)


def _basic_block(x, filters, strides, is_training):
  shortcut = _shortcut(x, filters, strides, is_training)
  x = _conv_bn(x, filters, 3, strides, is_training, 'conv1')
  x = _conv_bn(x, filters, 3, 1, is_training, 'conv2', relu=False,
               zero_gamma=True)
  return tf.nn.relu(x + shortcut)


def _bottleneck_block(x, filters, strides, is_training):
  shortcut = _shortcut(x, 4 * filters, strides, is_training)
  x = _conv_bn(x, filters, 1, 1, is_training, 'conv1')
  x = _conv_bn(x, filters, 3, strides, is_training, 'conv2')
  x = _conv_bn(x, 4 * filters, 1, 1, is_training, 'conv3', relu=False,
               zero_gamma=True)
  return tf.nn.relu(x + shortcut)


def stem_kind(params):
  """'imagenet' or 'small', resolving params['resnet_stem'] == 'auto'."""
  stem = params['resnet_stem']
  if stem == 'auto':
    return ('imagenet' if params['image_size'] >= IMAGENET_STEM_MIN_SIZE
            else 'small')
  if stem not in ('imagenet', 'small'):
    raise ValueError(f"params['resnet_stem'] must be auto, imagenet or small, "
                     f'got {stem!r}.')
  return stem


def resnet(images, is_training, params):
  """Returns logits [batch, num_classes] in the dtype of `images`.

  params: `resnet_depth` (18, 34, 50, 101), `resnet_stem`, `image_size`,
  `num_classes`.
  """
  depth = int(params['resnet_depth'])
  if depth not in RESNET_SPECS:
    raise ValueError(f"params['resnet_depth'] must be one of "
                     f'{sorted(RESNET_SPECS)}, got {depth}.')
  kind, units = RESNET_SPECS[depth]
  block_fn = _basic_block if kind == 'basic' else _bottleneck_block
  with tf.compat.v1.variable_scope(f'resnet{depth}'):
    if stem_kind(params) == 'imagenet':
      x = _conv_bn(images, 64, 7, 2, is_training, 'stem')
      x = layers.max_pool(x, 3, 2)
    else:
      x = _conv_bn(images, 64, 3, 1, is_training, 'stem')
    for stage, (filters, num_units) in enumerate(zip(_STAGE_FILTERS, units),
                                                 start=1):
      for unit in range(1, num_units + 1):
        strides = 2 if unit == 1 and stage > 1 else 1
        with tf.compat.v1.variable_scope(f'stage{stage}/unit{unit}'):
          x = block_fn(x, filters, strides, is_training)
    x = layers.global_avg_pool(x)
    return layers.logits(x, params['num_classes'], name='logits',
                         kernel_initializer=(
                             tf.compat.v1.random_normal_initializer(
                                 stddev=0.01)))
