"""tensorflow_estimator 2.15's modules as TF 2.15 imports them: the source
of the facade's inventory (scripts/estimator_inventory.py, legacy lane).

Every module of the installed tensorflow_estimator package, of TF's own
tensorflow.python.estimator package (shims that re-export it) and the
tensorflow.python.tpu modules that re-export its TPU modules; and the
attribute paths (tf.estimator, tf.compat.vN[.compat.vM].estimator, ...)
under which TF publishes its API. TF's API wrappers (TFModuleWrapper,
LazyLoader) are resolved to the modules they stand for.
"""

import importlib
import os
import pkgutil
import re
import sys
import types

# pylint: disable=g-direct-tensorflow-import,protected-access

# The packages whose every module is walked.
PACKAGES = ('tensorflow_estimator', 'tensorflow.python.estimator')
# TF's module of single-file shims that re-export tensorflow_estimator's TPU
# modules (tensorflow.python.tpu.tpu_estimator, ...).
TPU_SHIMS = 'tensorflow.python.tpu'
# Where TF publishes the Estimator API as attributes.
API_ROOTS = ('tf', 'tf.compat.v1', 'tf.compat.v2', 'tf.compat.v1.compat.v1',
             'tf.compat.v1.compat.v2', 'tf.compat.v2.compat.v1',
             'tf.compat.v2.compat.v2')
_SHIM_IMPORT = re.compile(r'^from (tensorflow_estimator\S*) import \*', re.M)


def unwrap(value):
  """The module a TF API wrapper (TFModuleWrapper, LazyLoader) stands for;
  other values unchanged."""
  if isinstance(value, types.ModuleType):
    wrapped = value.__dict__.get('_tfmw_wrapped_module')
    if wrapped is not None:
      return wrapped
    if type(value).__name__ == 'LazyLoader':
      dir(value)  # Loads it; its name is the module's.
      return unwrap(sys.modules[value.__name__])
  return value


def _walk(package):
  """{path: module} of `package` and every module under it."""
  root = importlib.import_module(package)
  found = {package: root}
  for info in pkgutil.walk_packages(root.__path__, package + '.'):
    found[info.name] = importlib.import_module(info.name)
  return found


def _tpu_shims():
  """{path: module} of the tensorflow.python.tpu modules that star-import a
  tensorflow_estimator module."""
  package = importlib.import_module(TPU_SHIMS)
  found = {}
  for directory in package.__path__:
    for name in sorted(os.listdir(directory)):
      if not name.endswith('.py'):
        continue
      with open(os.path.join(directory, name), encoding='utf-8') as f:
        if _SHIM_IMPORT.search(f.read()):
          path = f'{TPU_SHIMS}.{name[:-3]}'
          found[path] = importlib.import_module(path)
  return found


def modules():
  """{path: module} of every module the reference has (see docstring),
  wrappers resolved."""
  found = {}
  for package in PACKAGES:
    found.update(_walk(package))
  found.update(_tpu_shims())
  return {path: unwrap(module) for path, module in found.items()}


def mirror_of(module):
  """The tensorflow_estimator module a TF shim module star-imports, else
  None."""
  path = getattr(module, '__file__', None)
  if module.__name__.startswith('tensorflow_estimator') or not (
      path and path.endswith('.py')):
    return None
  with open(path, encoding='utf-8') as f:
    match = _SHIM_IMPORT.search(f.read())
  return match.group(1) if match else None


def api_modules(tf):
  """{attribute path: module} of TF's Estimator API modules: `estimator`
  under each of API_ROOTS and its submodules, recursively."""
  found = {}

  def visit(path, module):
    module = found[path] = unwrap(module)
    for name, value in sorted(vars(module).items()):
      if name.startswith('_'):
        continue
      if isinstance(value, types.ModuleType):
        visit(f'{path}.{name}', value)

  for root in API_ROOTS:
    parent = tf
    for part in root.split('.')[1:]:
      parent = getattr(parent, part)
    if hasattr(parent, 'estimator'):
      visit(f'{root}.estimator', parent.estimator)
  return found
