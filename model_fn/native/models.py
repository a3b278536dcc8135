"""The native (Keras) built-in models' makers, and their weights created."""

from model_fn import resnet as tf1_resnet
from model_fn.native import mlp
from model_fn.native import resnet
from model_fn.native.legacy_keras import keras
import tensorflow as tf

_POLICIES = {'float32': 'float32', 'bfloat16': 'mixed_bfloat16'}


def dtype_policy(params):
  """The Keras dtype policy of params['precision']: float32 variables always;
  bfloat16 compute under 'mixed_bfloat16'."""
  precision = params['precision']
  if precision not in _POLICIES:
    raise ValueError(f"params['precision'] must be one of {sorted(_POLICIES)}"
                     f', got {precision!r}.')
  return keras.mixed_precision.Policy(_POLICIES[precision])


def make_mlp(params, policy):
  """The native MLP of params (mlp_hidden_units, num_classes), unbuilt."""
  return mlp.MLP(params['mlp_hidden_units'], params['num_classes'],
                 dtype=policy)


def make_resnet(params, policy):
  """The native ResNet of params (resnet_depth, resnet_stem: 'auto' resolved
  by model_fn.resnet.stem_kind, num_classes), unbuilt."""
  return resnet.ResNet(int(params['resnet_depth']), params['num_classes'],
                       stem=tf1_resnet.stem_kind(params), dtype=policy)


def build(make_model, params):
  """make_model(params, dtype policy) with its weights created.

  make_model: a built-in model's maker (make_mlp, make_resnet; the registry,
  trainer/models/builtin.py, picks it by params['model']). params: also
  precision, image_size, image_channels. Call it inside the strategy's scope.
  """
  model = make_model(params, dtype_policy(params))
  size, channels = params['image_size'], params['image_channels']
  model(tf.zeros([1, size, size, channels]), training=False)
  return model
