"""What the facade publishes against tensorflow_estimator 2.15's inventory
(trainer/facade/inventory.json), name by name; for inventory_test.py and
migration_tables.py. Needs the facade installed (TF >= 2.16).

status(): 'provided' (the facade's own object: same kind, signature, class
members, identities and constant values as the reference), 'refused' (a
stand-in of a gap of trainer/facade/gaps.py that raises naming the name and
the alternative) or 'missing'; problems() says what differs.
"""

import dataclasses
import importlib
import inspect
import sys
from typing import List

from trainer.facade import gaps
from trainer.facade import inventory
from trainer.facade import stand_ins
from trainer.facade import unsupported


@dataclasses.dataclass
class Name:
  path: str
  name: str
  record: dict
  status: str = 'missing'
  problems: List[str] = dataclasses.field(default_factory=list)

  @property
  def key(self):
    return f'{self.path}:{self.name}'


_MISSING = object()


def resolve(place):
  """The facade's object at inventory place 'path:name' (_MISSING if none)."""
  path, _, name = place.rpartition(':')
  try:
    return getattr(importlib.import_module(path), name)
  except (ImportError, AttributeError):
    return _MISSING


def _member_problems(entry, cls):
  """What differs between the members `cls` has and the reference class's
  own members (entry.record['methods']); a missing member a gap covers
  ('path:Class.member') is no problem."""
  problems = []
  data = inventory.load()
  for member, expected in sorted(entry.record.get('methods', {}).items()):
    try:
      actual = inspect.getattr_static(cls, member)
    except AttributeError:
      if not gaps.gaps_for(data, entry.path, f'{entry.name}.{member}'):
        problems.append(f'member {member} missing')
      continue
    actual_kind, params = inventory.member(actual)
    if expected['kind'] != actual_kind and not (
        expected['kind'] == 'function' and actual_kind == 'attribute' and
        callable(actual)):
      problems.append(f'member {member}: {actual_kind} here, '
                      f'{expected["kind"]} on the reference')
      continue
    if 'signature' in expected:
      if params is None and callable(actual):
        params = inventory.signature(actual)
      for diff in inventory.signature_differences(expected['signature'],
                                                  params):
        problems.append(f'member {member}: {diff}')
    if 'value' in expected and actual != expected['value'] and (
        inventory.plain(actual) != expected['value']):
      problems.append(f'member {member}: {actual!r} here, '
                      f'{expected["value"]!r} on the reference')
  return problems


def _refusal_problems(entry, value):
  """What is wrong with `value` as the stand-in of a refused name (a
  re-export: the stand-in of the name it re-exports)."""
  problems = []
  place = entry.record.get('same_as')
  if place:
    if value is not resolve(place):
      problems.append(f'is not the object at {place} (the same object on '
                      'the reference)')
    path, _, name = place.rpartition(':')
  else:
    path, name = entry.path, entry.name
  gap = gaps.gap_for(inventory.load(), path, name)
  if gap is None:
    return problems + [f'a stand-in, but no gap of gaps.py covers {path}:'
                       f'{name}']
  kind = entry.record['kind']
  if kind != 'constant' and inventory.kind(value) != kind:
    problems.append(f'stand-in is a {inventory.kind(value)}, the reference '
                    f'has a {kind}')
  try:
    value()
  except unsupported.UnsupportedApiError as e:
    text = str(e)
    if name not in text or gap.instead not in text:
      problems.append(f'its error does not name it and the alternative: '
                      f'{text}')
  except Exception as e:  # pylint: disable=broad-except
    problems.append(f'using it raises {type(e).__name__}: {e}')
  else:
    problems.append('using it does not raise UnsupportedApiError')
  return problems


def check(data, path, name, record):
  """The Name of reference name `path`.`name` under the installed facade."""
  entry = Name(path, name, record)
  try:
    module = importlib.import_module(path)
  except ImportError as e:
    entry.problems.append(f'module does not import: {e}')
    return entry
  try:
    value = getattr(module, name)
  except AttributeError:
    return entry
  except Exception as e:  # pylint: disable=broad-except
    entry.problems.append(f'looking it up raises {type(e).__name__}: {e}')
    return entry
  if stand_ins.is_stand_in(value):
    entry.status = 'refused'
    entry.problems.extend(_refusal_problems(entry, value))
    return entry
  entry.status = 'provided'
  kind = record['kind']
  if kind == 'module':
    target = sys.modules.get(record['target']) or importlib.import_module(
        record['target'])
    if value is not target:
      entry.problems.append(f'is not the module {record["target"]}')
    return entry
  if inventory.kind(value) != kind:
    entry.problems.append(f'a {inventory.kind(value)} here, a {kind} on the '
                          'reference')
    return entry
  if 'same_as' in record:
    expected = resolve(record['same_as'])
    if value is not expected:
      entry.problems.append(f'is not the object at {record["same_as"]} (the '
                            'same object on the reference)')
    return entry
  if 'value' in record:
    environment = gaps.environment_value(data, path, name)
    if environment:
      if value != environment[1]():
        entry.problems.append(f'{value!r} here, but {environment[0]} is '
                              f'{environment[1]()!r}')
    elif inventory.plain(value) != record['value']:
      entry.problems.append(f'{value!r} here, {record["value"]!r} on the '
                            'reference')
    return entry
  # A class without a constructor of its own: (*args, **kwargs).
  generic = kind == 'class' and record.get('signature') == ['*args',
                                                             '**kwargs']
  if kind in ('class', 'function') and 'signature' in record and (
      not generic):
    entry.problems.extend(inventory.signature_differences(
        record['signature'], inventory.signature(value)))
  if kind == 'class':
    entry.problems.extend(_member_problems(entry, value))
  return entry


def check_all(data=None):
  """[Name] of every name of every module of the inventory."""
  data = data or inventory.load()
  return [check(data, path, name, record)
          for path in sorted(data['modules'])
          for name, record in sorted(inventory.names(data, path).items())]
