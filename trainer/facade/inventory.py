"""The inventory of tensorflow_estimator 2.15: its format, and the copy the
facade publishes against (inventory.json, written on the legacy lane by
scripts/estimator_inventory.py; never edited by hand).

For every module path the reference has (tensorflow_estimator.*, TF 2.15's
tensorflow.python.estimator.* and tensorflow.python.tpu.* shims) the
inventory records `package` (whether it has submodules), `mirror_of` (the
module a shim star-imports) and `names`: each name a library can import
from it, described by describe():
  kind       'class', 'function', 'constant' or 'module' (a submodule, or
             another module of the reference: `target` is its path);
  same_as    'path:name' of the first place the same object appears, when
             it is not this one (the object is identical on the reference:
             the facade must keep those identities);
  signature  the parameters, as signature() writes them (classes: the
             constructor's);
  methods    the members a class of tensorflow_estimator defines itself
             (its bases' are in their records), {name: {kind, signature}}
             (kind: function, staticmethod, classmethod, property or
             attribute): what a subclass may override;
  bases      a class's bases, as 'module.qualname';
  value      a constant's value when JSON can hold it (else `type`).
A shim's names that are its mirror's very objects are only listed, in
`mirrored`; names() expands them. `aliases` maps each TF attribute path (tf.estimator, tf.compat.v1.estimator,
..., their submodules) to the module whose names it has; `importable` lists
the ones `import` also finds. EXCLUDED says which names are left out.
"""

import enum
import functools
import inspect
import json
import os
import types

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    'inventory.json')

# Names an importer never takes from an Estimator module, so the inventory
# leaves them out (the rule's text is in the file too).
EXCLUDED = (
    'dunder names (__doc__, __all__, ...)',
    'modules that are not the reference\'s own (tensorflow, six, numpy, '
    'the standard library: a library imports them from their packages)',
    '__future__ features (absolute_import, division, print_function)',
    'the standard library\'s classes, functions and typing forms imported '
    'for the module\'s own use (typing.Any, contextlib.contextmanager, '
    'builtins.range, ...)',
    'class attributes TF\'s API and documentation generators set '
    '(_estimator_api_names, _estimator_api_names_v1, _tf_api_names, '
    '_tf_docs_*, ...): where TF\'s build published a class, not an API',
)
# Class attributes the API and documentation generators set (EXCLUDED).
_GENERATED_MEMBERS = ('_estimator_api_', '_tf_api_', '_tf_docs_')
_STDLIB_ROOTS = frozenset(('builtins', 'typing', 'collections', 'contextlib',
                           'abc', 'enum', 'functools', 'six', '__future__'))


@functools.lru_cache(maxsize=None)
def load():
  """The checked-in inventory (a dict, see the module docstring)."""
  with open(PATH, encoding='utf-8') as f:
    return json.load(f)


def names(data, path):
  """{name: record} of module `path`, its `mirrored` names expanded (as
  `same_as` the mirror's)."""
  module = data['modules'][path]
  found = dict(module['names'])
  mirror = module.get('mirror_of')
  for name in module.get('mirrored', ()):
    record = data['modules'][mirror]['names'][name]
    if record['kind'] == 'module':
      found[name] = record
    else:
      found[name] = {'kind': record['kind'],
                     'same_as': record.get('same_as', f'{mirror}:{name}')}
  return found


def dumps(inventory):
  """The inventory as written to inventory.json: sorted, one name a line."""
  lines = ['{']
  top = [k for k in sorted(inventory) if k != 'modules']
  for key in top:
    lines.append(f' {json.dumps(key)}: '
                 f'{json.dumps(inventory[key], sort_keys=True)},')
  lines.append(' "modules": {')
  modules = inventory['modules']
  for i, path in enumerate(sorted(modules)):
    module = dict(modules[path])
    names = module.pop('names')
    head = json.dumps(module, sort_keys=True)[1:-1]
    lines.append(f'  {json.dumps(path)}: {{{head}, "names": {{')
    for j, name in enumerate(sorted(names)):
      comma = ',' if j < len(names) - 1 else ''
      lines.append(f'   {json.dumps(name)}: '
                   f'{json.dumps(names[name], sort_keys=True)}{comma}')
    lines.append('  }}' + (',' if i < len(modules) - 1 else ''))
  lines.append(' }')
  lines.append('}')
  return '\n'.join(lines) + '\n'


# -- describing objects ------------------------------------------------------

def _root_module(value):
  return (getattr(value, '__module__', None) or '').split('.')[0]


def is_standard_library(value):
  """Whether a class, function or typing form comes from the standard
  library (or six, which re-exports it)."""
  if isinstance(value, types.ModuleType):
    return False
  if inspect.isclass(value) or callable(value):
    return _root_module(value) in _STDLIB_ROOTS
  return type(value).__module__.split('.')[0] in ('typing', '__future__')


def _default(value):
  """A stable text for a parameter's default value."""
  if value is inspect.Parameter.empty:
    return None
  if isinstance(value, enum.Enum):
    return f'{type(value).__name__}.{value.name}'
  if inspect.isclass(value):
    return f'<class {value.__qualname__}>'
  if inspect.ismodule(value):  # Not its repr: that names its file's path.
    return f'<module {value.__name__}>'
  if callable(value) and hasattr(value, '__qualname__'):
    return f'<function {value.__qualname__}>'
  text = repr(value)
  if ' at 0x' in text or ' object at ' in text:
    return f'<{type(value).__name__}>'
  return text


def signature(value):
  """A callable's parameters as Python writes them, one a string:
  ['self', 'mode=\'infer\'', '*', 'name=None', '**kwargs'] ('/' and '*'
  are Python's markers); None when Python cannot tell (a builtin)."""
  try:
    sig = inspect.signature(value)
  except (TypeError, ValueError):
    return None
  return str(sig.replace(return_annotation=inspect.Signature.empty,
                         parameters=[
                             p.replace(annotation=inspect.Parameter.empty,
                                       default=_Default(_default(p.default))
                                       if p.default is not p.empty else
                                       p.empty)
                             for p in sig.parameters.values()]))[1:-1].split(
                                 ', ') if sig.parameters else []


class _Default:
  """A default value shown as its stable text."""

  def __init__(self, text):
    self._text = text

  def __repr__(self):
    return self._text


def parameters(params):
  """[(name, inspect kind, default text or None)] of a signature() form."""
  found = []
  kind_now = inspect.Parameter.POSITIONAL_OR_KEYWORD
  for token in params:
    if token == '/':
      found = [(n, inspect.Parameter.POSITIONAL_ONLY, d) for n, _, d in found]
      continue
    if token == '*':
      kind_now = inspect.Parameter.KEYWORD_ONLY
      continue
    if token.startswith('**'):
      found.append((token[2:], inspect.Parameter.VAR_KEYWORD, None))
      continue
    if token.startswith('*'):
      found.append((token[1:], inspect.Parameter.VAR_POSITIONAL, None))
      kind_now = inspect.Parameter.KEYWORD_ONLY
      continue
    name, _, default = token.partition('=')
    found.append((name, kind_now, default if _ else None))
  return found


def as_signature(params):
  """An inspect.Signature from signature()'s form (defaults as text)."""
  return inspect.Signature([
      inspect.Parameter(name, param_kind,
                        default=(inspect.Parameter.empty if default is None
                                 else _Default(default)))
      for name, param_kind, default in parameters(params)])


def _json_value(value):
  """value as JSON holds it (sets sorted), or raises TypeError."""
  if value is None or isinstance(value, (bool, int, float, str)):
    if isinstance(value, float) and value != value:  # NaN.
      raise TypeError('nan')
    return value
  if isinstance(value, (list, tuple)):
    return [_json_value(v) for v in value]
  if isinstance(value, (set, frozenset)):
    return sorted(_json_value(v) for v in value)
  if isinstance(value, dict) and all(isinstance(k, (str, int)) for k in value):
    return {str(k): _json_value(v) for k, v in value.items()}
  raise TypeError(type(value).__name__)


def plain(value):
  """`value` as the inventory records a constant (JSON's form), or None if
  JSON cannot hold it."""
  try:
    return _json_value(value)
  except TypeError:
    return None


def kind(value):
  """'module', 'class', 'function' or 'constant'."""
  if isinstance(value, types.ModuleType):
    return 'module'
  if inspect.isclass(value):
    return 'class'
  if callable(value):
    return 'function'
  return 'constant'


def member(value):
  """(kind, signature or None) of a class's own member."""
  if isinstance(value, staticmethod):
    if getattr(value.__func__, '__name__', None) == '__new__':
      return 'function', signature(value.__func__)  # Python's own wrapping.
    return 'staticmethod', signature(value.__func__)
  if isinstance(value, classmethod):
    return 'classmethod', signature(value.__func__)
  if isinstance(value, property):
    return 'property', None
  if inspect.isfunction(value) or inspect.ismethoddescriptor(value):
    return 'function', signature(value)
  return 'attribute', None


def methods(cls):
  """{name: {kind, signature}} of the members `cls` itself defines (its
  bases' are in their own records), dunders but __init__, __new__ and
  __call__ left out: what a subclass may override."""
  found = {}
  for name, value in vars(cls).items():
    if name.startswith('__') and name not in ('__init__', '__new__',
                                              '__call__'):
      continue
    if name.startswith(_GENERATED_MEMBERS):
      continue
    member_kind, params = member(value)
    entry = {'kind': member_kind}
    if params is not None:
      entry['signature'] = params
    if member_kind == 'attribute':
      try:
        entry['value'] = _json_value(value)
      except TypeError:
        entry['type'] = type(value).__name__
    found[name] = entry
  return found


def qualified_name(value):
  return f'{value.__module__}.{value.__qualname__}'


def describe(value, own_module_prefix='tensorflow_estimator'):
  """The inventory record of a module attribute (see the module docstring;
  `same_as` and a module's `target` are the caller's), or None if EXCLUDED
  leaves it out. Modules: only {'kind': 'module'}."""
  value_kind = kind(value)
  if value_kind == 'module':
    return {'kind': 'module'}
  if is_standard_library(value):
    return None
  record = {'kind': value_kind}
  if value_kind == 'constant':
    try:
      record['value'] = _json_value(value)
    except TypeError:
      record['type'] = type(value).__name__
    return record
  params = signature(value)
  if params is not None:
    record['signature'] = params
  if value_kind == 'class':
    if value.__bases__ != (object,):
      record['bases'] = [qualified_name(b) for b in value.__bases__]
    if (value.__module__ or '').startswith(own_module_prefix):
      record['methods'] = methods(value)
  return record


# -- comparing a facade's signature with the reference's ----------------------

def signature_differences(reference, actual):
  """What differs between two signature() forms: parameter names and kinds
  in order, then defaults. [] if they match; a None signature (Python could
  not tell) matches any."""
  if reference is None or actual is None:
    return []
  ref, act = parameters(reference), parameters(actual)

  def shape(params):  # *args and **kwargs by kind: they take no keyword.
    return [('*' if k in (inspect.Parameter.VAR_POSITIONAL,
                          inspect.Parameter.VAR_KEYWORD) else n, k)
            for n, k, _ in params]

  if shape(ref) != shape(act):
    return [f'parameters ({", ".join(reference)}) on the reference, '
            f'({", ".join(actual)}) here']
  return [f'{name}: default {ref_default} on the reference, {act_default} '
          'here' for (name, _, ref_default), (_, _, act_default)
          in zip(ref, act) if ref_default != act_default]
