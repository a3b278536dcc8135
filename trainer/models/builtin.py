"""The built-in models: one typed entry per --model name, the only table of
them.

Everything the trainer knows about a built-in model is its `BuiltinModel`
entry: its model_fn, its TF2-native Keras twin (--runner=native, the
checkpoint converter), the settings only it reads, those that decide its
checkpoint's variables (trainer/guard/fingerprint.py), its rules between
settings (trainer/params.py) and what the memory report slices. A new
built-in model is one `register(BuiltinModel(...))` call here, its model_fn
in model_fn/ and (optionally) its Keras twin in model_fn/native/.

Loading is lazy: the table imports no TensorFlow, so flags.py and
trainer/params.py, which read it, stay light.
"""

import dataclasses
from typing import Callable, Dict, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class BuiltinModel:
  """A built-in model, as --model names it.

  load_model_fn: () -> model_fn(features, labels, mode, params).
  load_native_model: () -> make(params, dtype_policy) -> the Keras twin,
    unbuilt; None when the model has none (--runner=native refuses it).
  hyperparameters: the settings only this model reads (its own flags).
  fingerprint_keys: those of them that decide its checkpoint's variables.
  dense_widths: params -> the hidden widths --slice=dense splits; None when
    the model has no wide dense layer (--slice=dense is refused for it and
    the memory report's plot leaves that slicing out).
  check: params -> None, ValueError naming the flag when the model's own
    settings cannot work (a rule of trainer/params.py).
  """

  name: str
  load_model_fn: Callable[[], Callable]
  load_native_model: Optional[Callable[[], Callable]]
  hyperparameters: Tuple[str, ...]
  fingerprint_keys: Tuple[str, ...]
  dense_widths: Optional[Callable[[dict], list]] = None
  check: Optional[Callable[[dict], None]] = None


MODELS: Dict[str, BuiltinModel] = {}  # --model name -> its entry.


def register(entry):
  """Adds `entry` to MODELS; ValueError if its name is taken."""
  if entry.name in MODELS:
    raise ValueError(f'built-in model {entry.name!r} is registered twice.')
  unknown = set(entry.fingerprint_keys) - set(entry.hyperparameters)
  if unknown:
    raise ValueError(f'built-in model {entry.name!r}: fingerprint keys '
                     f'{sorted(unknown)} are not among its hyperparameters.')
  MODELS[entry.name] = entry
  return entry


def get(name):
  """The entry of built-in model `name`, or None (a module:function)."""
  return MODELS.get(name)


def hyperparameter_keys():
  """Every built-in model's own settings, in registration order."""
  keys = []
  for entry in MODELS.values():
    keys += [k for k in entry.hyperparameters if k not in keys]
  return tuple(keys)


def native_names():
  """The built-in models that have a native (Keras) twin."""
  return tuple(name for name, entry in MODELS.items()
               if entry.load_native_model is not None)


def fingerprint_keys(name):
  """The settings of model `name` that decide its checkpoint's variables
  beyond the common ones (none for a model_fn module)."""
  entry = get(name)
  return entry.fingerprint_keys if entry is not None else ()


def model_fn(name):
  """The model_fn of built-in model `name` (KeyError if there is none)."""
  return MODELS[name].load_model_fn()


def build_native_model(params):
  """The native Keras model of params['model'], its variables made (call it
  inside the strategy's scope); ValueError naming params['model'] if that
  model has no native twin."""
  from model_fn.native import models as native_models  # pylint: disable=g-import-not-at-top
  entry = get(params['model'])
  if entry is None or entry.load_native_model is None:
    raise ValueError(f"params['model'] must be one of {list(native_names())}"
                     f" for the native models, got {params['model']!r}.")
  return native_models.build(entry.load_native_model(), params)


# The entries. Loaders import on first use (TensorFlow, Keras).
# pylint: disable=g-import-not-at-top


def _mlp_model_fn():
  from model_fn import models
  return models.mlp_model_fn


def _mlp_native():
  from model_fn.native import models as native_models
  return native_models.make_mlp


def _mlp_widths(params):
  return params['mlp_hidden_units']


def _mlp_check(params):
  if not params['mlp_hidden_units']:
    raise ValueError('--mlp_hidden_units must name at least one layer.')


def _resnet_model_fn():
  from model_fn import models
  return models.resnet_model_fn


def _resnet_native():
  from model_fn.native import models as native_models
  return native_models.make_resnet


register(BuiltinModel(
    name='mlp', load_model_fn=_mlp_model_fn, load_native_model=_mlp_native,
    hyperparameters=('mlp_hidden_units',),
    fingerprint_keys=('mlp_hidden_units',),
    dense_widths=_mlp_widths, check=_mlp_check))
register(BuiltinModel(
    name='resnet', load_model_fn=_resnet_model_fn,
    load_native_model=_resnet_native,
    hyperparameters=('resnet_depth', 'resnet_stem'),
    fingerprint_keys=('resnet_depth', 'resnet_stem')))
