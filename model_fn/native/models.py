"""Builds the native model params name, with its weights created."""

from model_fn import resnet as tf1_resnet
from model_fn.native import mlp
from model_fn.native import resnet
from model_fn.native.legacy_keras import keras
import tensorflow as tf

MODELS = ('mlp', 'resnet')
_POLICIES = {'float32': 'float32', 'bfloat16': 'mixed_bfloat16'}


def dtype_policy(params):
  """The Keras dtype policy of params['precision']: float32 variables always;
  bfloat16 compute under 'mixed_bfloat16'."""
  precision = params['precision']
  if precision not in _POLICIES:
    raise ValueError(f"params['precision'] must be one of {sorted(_POLICIES)}"
                     f', got {precision!r}.')
  return keras.mixed_precision.Policy(_POLICIES[precision])


def build_model(params):
  """The native model of params['model'] (mlp|resnet), its variables made.

  params: model, num_classes, image_size, image_channels, precision, and
  mlp_hidden_units or resnet_depth / resnet_stem (model_fn.resnet.stem_kind
  resolves 'auto'). Call it inside the strategy's scope.
  """
  name = params['model']
  policy = dtype_policy(params)
  if name == 'mlp':
    model = mlp.MLP(params['mlp_hidden_units'],
                    params['num_classes'], dtype=policy)
  elif name == 'resnet':
    model = resnet.ResNet(int(params['resnet_depth']),
                          params['num_classes'],
                          stem=tf1_resnet.stem_kind(params), dtype=policy)
  else:
    raise ValueError(f"params['model'] must be one of {list(MODELS)} for the "
                     f'native models, got {name!r}.')
  size, channels = params['image_size'], params['image_channels']
  model(tf.zeros([1, size, size, channels]), training=False)
  return model

