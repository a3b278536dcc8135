"""The facade's modules completed from tensorflow_estimator 2.15's inventory
(inventory.json), so that every module path and name the reference has is
there.

complete(module, path) gives a facade module published at reference path
`path` what the reference has there and the facade's own code lacks:
  * constants JSON can hold: the reference's value;
  * the classes and functions the facade does not provide, each covered by
    a gap of gaps.py: stand-ins, importable and subclassable, that raise
    UnsupportedApiError naming `path.name`, why and the alternative when
    called or instantiated (with the reference's signature);
  * on first access (the module's __getattr__): the reference's
    submodules and other modules (imported), and names the reference
    re-exports from another of its modules (`same_as`: that module's
    object, so identities hold as on the reference).
Module paths install() does not build are made on first import by Finder,
last on sys.meta_path (a program's own finder, or a module a library ships,
comes first), and completed the same way. A name neither the facade nor a
gap covers stays missing: an AttributeError, which
tests/facade/inventory_test.py reports as a new gap.
"""

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys

from trainer.facade import gaps
from trainer.facade import inventory
from trainer.facade import unsupported

# Marks a stand-in, so that tests and tools can tell one.
STAND_IN_MARK = '_trainer_legacy_stand_in'


class _RefusedValue:
  """A constant the facade does not provide: using it raises."""

  def __init__(self, api, gap):
    object.__setattr__(self, '_api', api)
    object.__setattr__(self, '_gap', gap)
    object.__setattr__(self, STAND_IN_MARK, True)

  def _refuse(self, *unused_args, **unused_kwargs):
    raise unsupported.error_for(self._api, self._gap.why, self._gap.instead)

  def __getattr__(self, name):
    if name.startswith('__'):
      raise AttributeError(name)
    return self._refuse()

  __call__ = __iter__ = __len__ = __getitem__ = __contains__ = _refuse
  __bool__ = _refuse

  def __repr__(self):
    return f'<not supported by trainer.legacy: {self._api}>'


@functools.lru_cache(maxsize=None)
def _public_names():
  """{'path:name': the shortest tf.* API path of the object there} from the
  inventory's aliases (and tf.keras.estimator's names, keras_lib's)."""
  data = inventory.load()
  found = {}
  for alias, module in sorted(data['aliases'].items(),
                              key=lambda a: (len(a[0]), a[0])):
    if not alias.startswith('tf.'):
      continue
    for name, record in inventory.names(data, module).items():
      place = record.get('same_as', f'{module}:{name}')
      found.setdefault(place, f'{alias}.{name}')
  keras_lib = 'tensorflow_estimator.python.estimator.keras_lib'
  for name in data['keras'].get('tf.keras.estimator', ()):
    found.setdefault(f'{keras_lib}:{name}', f'tf.keras.estimator.{name}')
  return found


def api_name(path, name):
  """How errors name reference name `path`.`name`: its public API path
  first when it has one."""
  public = _public_names().get(f'{path}:{name}')
  return f'{public} ({path}.{name})' if public else f'{path}.{name}'


def stand_in(path, name, record, gap):
  """The stand-in for reference name `path`.`name` (its inventory record;
  `gap`, the gaps.Gap covering it)."""
  api = api_name(path, name)

  def refuse(*unused_args, **unused_kwargs):
    raise unsupported.error_for(api, gap.why, gap.instead)

  doc = f'Not supported by trainer.legacy: {gap.why}. Instead: {gap.instead}.'
  signature = record.get('signature')
  if record['kind'] == 'class':

    def __init__(self, *args, **kwargs):  # pylint: disable=invalid-name
      del self
      refuse(*args, **kwargs)

    cls = type(name, (), {'__init__': __init__, '__doc__': doc,
                          '__module__': path, STAND_IN_MARK: True})
    if signature is not None:
      cls.__signature__ = inventory.as_signature(signature)
    return cls
  if record['kind'] == 'function':
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__module__ = path
    refuse.__doc__ = doc
    setattr(refuse, STAND_IN_MARK, True)
    if signature is not None:
      refuse.__signature__ = inventory.as_signature(signature)
    return refuse
  return _RefusedValue(api, gap)


def is_stand_in(value):
  return bool(getattr(value, STAND_IN_MARK, False))


def _missing_values(path, present):
  """{name: value} of what the reference has in module `path` that
  `present` (the module's names) lacks and is no later lookup's: JSON
  constants and the gaps' stand-ins."""
  data = inventory.load()
  found = {}
  for name, record in inventory.names(data, path).items():
    if name in present or record['kind'] == 'module' or 'same_as' in record:
      continue
    if 'value' in record:
      environment = gaps.environment_value(data, path, name)
      found[name] = environment[1]() if environment else record['value']
      continue
    gap = gaps.gap_for(data, path, name)
    if gap is not None:
      found[name] = stand_in(path, name, record, gap)
  return found


def lookup(path, name):
  """What complete() leaves to first access: reference module `path`'s
  submodule or module `name` (imported), or the object it re-exports as
  `name` from another module. AttributeError if there is none."""
  data = inventory.load()
  if path not in data['modules']:
    raise AttributeError(name)
  record = inventory.names(data, path).get(name)
  if record is None:
    raise AttributeError(name)
  if record['kind'] == 'module':
    return importlib.import_module(record['target'])
  if 'same_as' in record:
    owner, _, owner_name = record['same_as'].rpartition(':')
    owner_module = importlib.import_module(owner)
    if owner_module is not sys.modules.get(path) or owner_name != name:
      return getattr(owner_module, owner_name)
  raise AttributeError(name)


def complete(module, path):
  """Adds to `module`, published at reference path `path`, what
  _missing_values() finds, and makes its missing attributes go through
  lookup() first (then the module's own __getattr__, if any). Returns it.
  """
  if path not in inventory.load()['modules']:
    return module
  for name, value in _missing_values(path, vars(module)).items():
    setattr(module, name, value)
  fallback = vars(module).get('__getattr__')

  def __getattr__(attr):  # pylint: disable=invalid-name
    if not attr.startswith('__'):
      try:
        return lookup(path, attr)
      except AttributeError:
        pass
    if fallback is not None:
      return fallback(attr)
    raise AttributeError(f"module '{path}' has no attribute '{attr}'")

  module.__getattr__ = __getattr__
  return module


def is_reference(path):
  """Whether `path` is one of the reference's module paths."""
  return path in inventory.load()['modules']


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
  """Makes, on first import, a reference module path install() did not
  build: the module it re-exports (a TF shim's mirror, or `alias_of(path)`:
  the same facade module), else `make_module(path, is_package)`,
  completed."""

  def __init__(self, make_module, alias_of):
    self._make_module = make_module
    self._alias_of = alias_of

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    modules = inventory.load()['modules']
    if fullname not in modules:
      return None
    return importlib.machinery.ModuleSpec(
        fullname, self, is_package=modules[fullname]['package'])

  def create_module(self, spec):
    record = inventory.load()['modules'][spec.name]
    same = record.get('mirror_of') or self._alias_of(spec.name)
    if same and is_reference(same):
      return complete(importlib.import_module(same), spec.name)
    return complete(self._make_module(spec.name, record['package']),
                    spec.name)

  def exec_module(self, module):
    del module  # create_module() filled it.


def install_finder(make_module, alias_of):
  """Appends a Finder to sys.meta_path, once."""
  if not any(isinstance(f, Finder) for f in sys.meta_path):
    sys.meta_path.append(Finder(make_module, alias_of))
