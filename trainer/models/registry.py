"""Resolves --model and --input to callables: a built-in name or module:function.

`module` is a dotted module on sys.path (PYTHONPATH) or a path to a .py file,
so a team's own model_fn can live outside this repository:
  --model=my_team.models:model_fn   --model=/src/my_model.py:model_fn
"""

import importlib
import importlib.util
import os
import sys

from trainer.models import builtin

_file_modules = {}  # Absolute path of a .py file -> its module.


def _import_file(path):
  """Imports a .py file once, as `python path` would see its neighbours:
  its directory first on sys.path, its stem as its module name (unless that
  name is another module's)."""
  path = os.path.abspath(path)
  if path in _file_modules:
    return _file_modules[path]
  directory = os.path.dirname(path)
  if directory not in sys.path:
    sys.path.insert(0, directory)
  name = os.path.splitext(os.path.basename(path))[0]
  if name in sys.modules:
    name = f'_trainer_user_{len(_file_modules)}_{name}'
  module_spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(module_spec)
  sys.modules[name] = module
  try:
    module_spec.loader.exec_module(module)
  except BaseException:
    del sys.modules[name]
    raise
  _file_modules[path] = module
  return module


def _import_module(module_name, flag, spec):
  if module_name.endswith('.py'):
    if not os.path.isfile(module_name):
      raise ValueError(f'--{flag}={spec}: file {module_name} does not exist.')
    return _import_file(module_name)
  try:
    return importlib.import_module(module_name)
  except ImportError as e:
    raise ValueError(f'--{flag}={spec}: cannot import module '
                     f'{module_name!r}: {e}') from e


def import_module_of(spec, builtins, flag):
  """Imports the module of `spec` (module:function) unless it names a
  built-in; for entry points that must do it before parsing flags."""
  if spec in builtins or ':' not in spec:
    return None
  return _import_module(spec.rpartition(':')[0], flag, spec)


def resolve(spec, builtins, flag):
  """The callable `spec` names; ValueError naming --flag if there is none."""
  if spec in builtins:
    return builtins[spec]  # A built-in: `builtins` maps names to callables.
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
  """model_fn(features, labels, mode, params) named by --model: a built-in
  model's (trainer/models/builtin.py) or module:function's."""
  if spec in builtin.MODELS:
    return builtin.model_fn(spec)
  return resolve(spec, builtin.MODELS, 'model')


def resolve_input_fn(spec, flag='input'):
  """input_fn(params) named by --input (or --eval_input, --predict_input)."""
  from input_fn import inputs  # pylint: disable=g-import-not-at-top
  return resolve(spec, inputs.INPUT_FNS, flag)


def resolve_serving_input_fn(spec):
  """serving_input_receiver_fn() named by --serving_input_fn (no built-in:
  the default export takes encoded images, trainer/runtime/serving.py)."""
  return resolve(spec, {}, 'serving_input_fn')
