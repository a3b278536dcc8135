"""The TF2-native ResNet v1.5 (18, 34, 50, 101): model_fn.resnet in Keras.

Same network as model_fn.resnet, weight for weight: the stride sits in the
3x3 convolution of bottleneck blocks (v1.5) and in the first 3x3 of basic
blocks; strided convolutions pad explicitly (kernel_size - 1, half before)
and run VALID; projection shortcuts (1x1 conv + BN) only where the channels
or the stride change; batch norm momentum 0.9, epsilon 1e-5, gamma of each
block's last batch norm initialised to zero; convolutions He-normal
(fan_out, truncated); stem 7x7/2 conv + 3x3/2 SAME max pool (imagenet) or
3x3/1 conv (small); global average pool; a dense logits layer initialised
N(0, 0.01); float32 logits.

Why not tf-models-official's `official.vision.modeling.backbones.ResNet`
(checked in 2.15 and 2.20): it is a backbone without the head, and it
differs from this v1.5 in ways that change the logits of converted weights:
strided convolutions (stem and blocks) use SAME padding, which pads
asymmetrically (0 before, 1 after for even sizes) instead of explicitly;
the first block of every stage, the first of ResNet-18/34 included, has a
projection shortcut (an extra 1x1 conv + BN where channels and stride do
not change); the last batch norm of a block is not zero-initialised; the
defaults are BN momentum 0.99 and epsilon 1e-3 and a fan_in initializer
(settable); and it has no small stem (3x3/1 conv, no max pool) for
28x28 inputs.
"""

from model_fn import resnet as tf1_resnet
from model_fn.native import layers
from model_fn.native.legacy_keras import keras
import tensorflow as tf

RESNET_SPECS = tf1_resnet.RESNET_SPECS
STAGE_FILTERS = (64, 128, 256, 512)
LOGITS_STDDEV = 0.01


class _Block(keras.layers.Layer):
  """A basic or bottleneck residual block of resnet._basic_block/_bottleneck."""

  def __init__(self, kind, filters, strides, in_channels, **kwargs):
    super().__init__(**kwargs)
    policy = self.dtype_policy
    out_channels = filters if kind == 'basic' else 4 * filters
    self.shortcut = None
    if in_channels != out_channels or strides != 1:
      self.shortcut = layers.ConvBN(out_channels, 1, strides, relu=False,
                                    name='shortcut', dtype=policy)
    if kind == 'basic':
      self._names = ['conv1', 'conv2']
      self.conv1 = layers.ConvBN(filters, 3, strides, name='conv1',
                                 dtype=policy)
      self.conv2 = layers.ConvBN(filters, 3, 1, relu=False, zero_gamma=True,
                                 name='conv2', dtype=policy)
    else:
      self._names = ['conv1', 'conv2', 'conv3']
      self.conv1 = layers.ConvBN(filters, 1, 1, name='conv1', dtype=policy)
      self.conv2 = layers.ConvBN(filters, 3, strides, name='conv2',
                                 dtype=policy)
      self.conv3 = layers.ConvBN(4 * filters, 1, 1, relu=False,
                                 zero_gamma=True, name='conv3', dtype=policy)

  def call(self, inputs, training=False):
    shortcut = inputs
    if self.shortcut is not None:
      shortcut = self.shortcut(inputs, training=training)
    x = inputs
    for name in self._names:
      x = getattr(self, name)(x, training=training)
    return tf.nn.relu(x + shortcut)

  def tf1_variables(self, scope):
    names = {}
    if self.shortcut is not None:
      names.update(self.shortcut.tf1_variables(f'{scope}/shortcut'))
    for name in self._names:
      names.update(getattr(self, name).tf1_variables(f'{scope}/{name}'))
    return names


class ResNet(keras.Model):
  """ResNet v1.5 classifier; `tf1_variables()` names its weights."""

  def __init__(self, depth, num_classes, stem='small', dtype=None,
               name=None):
    if depth not in RESNET_SPECS:
      raise ValueError(f'`depth` ({depth}) must be one of '
                       f'{sorted(RESNET_SPECS)}.')
    if stem not in ('imagenet', 'small'):
      raise ValueError(f"`stem` ({stem!r}) must be 'imagenet' or 'small'.")
    if num_classes < 1:
      raise ValueError(f'`num_classes` ({num_classes}) must be positive.')
    super().__init__(name=name or f'resnet{depth}', dtype=dtype)
    policy = self.dtype_policy
    self.depth = depth
    self._imagenet_stem = stem == 'imagenet'
    self.stem = layers.ConvBN(64, 7 if self._imagenet_stem else 3,
                              2 if self._imagenet_stem else 1, name='stem',
                              dtype=policy)
    kind, units = RESNET_SPECS[depth]
    self._units = []  # (scope, attribute name)
    channels = 64
    for stage, (filters, count) in enumerate(zip(STAGE_FILTERS, units), 1):
      for unit in range(1, count + 1):
        attribute = f'stage{stage}_unit{unit}'
        strides = 2 if unit == 1 and stage > 1 else 1
        setattr(self, attribute, _Block(kind, filters, strides, channels,
                                        name=attribute, dtype=policy))
        channels = filters if kind == 'basic' else 4 * filters
        self._units.append((f'stage{stage}/unit{unit}', attribute))
    self.logits = keras.layers.Dense(
        num_classes, name='logits', dtype=policy,
        kernel_initializer=keras.initializers.RandomNormal(
            stddev=LOGITS_STDDEV))

  def call(self, images, training=False):
    x = self.stem(images, training=training)
    if self._imagenet_stem:
      x = tf.nn.max_pool2d(x, 3, 2, 'SAME')
    for _, attribute in self._units:
      x = getattr(self, attribute)(x, training=training)
    x = tf.reduce_mean(x, axis=[1, 2])
    return tf.cast(self.logits(x), tf.float32)

  def tf1_variables(self):
    """{TF1 name (resnet18/stem/conv/kernel, ...): variable}."""
    root = f'resnet{self.depth}'
    names = dict(self.stem.tf1_variables(f'{root}/stem'))
    for scope, attribute in self._units:
      names.update(getattr(self, attribute).tf1_variables(f'{root}/{scope}'))
    names.update(layers.dense_tf1_variables(self.logits, f'{root}/logits'))
    return names
