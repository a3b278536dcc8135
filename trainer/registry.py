"""Resolves --model and --input to callables: a built-in name or module:function.

`module` is a dotted module on sys.path (PYTHONPATH) or a path to a .py file,
so a team's own model_fn can live outside this repository:
  --model=my_team.models:model_fn   --model=/src/my_model.py:model_fn
"""

import importlib
import importlib.util
import os


def _import_module(module_name, flag, spec):
  if module_name.endswith('.py'):
    if not os.path.isfile(module_name):
      raise ValueError(f'--{flag}={spec}: file {module_name} does not exist.')
    name = os.path.splitext(os.path.basename(module_name))[0]
    module_spec = importlib.util.spec_from_file_location(name, module_name)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module
  try:
    return importlib.import_module(module_name)
  except ImportError as e:
    raise ValueError(f'--{flag}={spec}: cannot import module '
                     f'{module_name!r}: {e}') from e


def resolve(spec, builtins, flag):
  """The callable `spec` names; ValueError naming --flag if there is none."""
  if spec in builtins:
    return builtins[spec]
  module_name, sep, attr = spec.rpartition(':')
  if not sep or not module_name or not attr:
    raise ValueError(
        f'--{flag}={spec!r} is neither a built-in ({", ".join(sorted(builtins))})'
        ' nor package.module:function.')
  module = _import_module(module_name, flag, spec)
  fn = getattr(module, attr, None)
  if fn is None:
    raise ValueError(f'--{flag}={spec}: module {module_name!r} has no '
                     f'attribute {attr!r}.')
  if not callable(fn):
    raise ValueError(f'--{flag}={spec}: {attr!r} is not callable.')
  return fn


def resolve_model_fn(spec):
  """model_fn(features, labels, mode, params) named by --model."""
  from trainer.compat import estimator as estimator_compat  # pylint: disable=g-import-not-at-top
  estimator_compat.install()  # Model code may name tf.estimator.ModeKeys.
  from model_fn import models  # pylint: disable=g-import-not-at-top
  return resolve(spec, models.MODEL_FNS, 'model')


def resolve_input_fn(spec):
  """input_fn(params) named by --input."""
  from input_fn import inputs  # pylint: disable=g-import-not-at-top
  return resolve(spec, inputs.INPUT_FNS, 'input')
