r"""Writes trainer/facade/inventory.json: every module of tensorflow_estimator
2.15 and TF 2.15's shims of it, with every name a library can import from
each (format: trainer/facade/inventory.py). Run on the legacy lane:

  .venv/legacy/bin/python -m scripts.estimator_inventory          # write
  .venv/legacy/bin/python -m scripts.estimator_inventory --check  # compare

--check exits 1 when the checked-in file differs from what the installed
reference gives (tests/facade/inventory_test.py does the same on that lane).
"""

import argparse
import importlib
import importlib.metadata
import sys

from trainer.compat import reference_modules
from trainer.facade import inventory


def _rank(path, name, value):
  """Which place of an object is its canonical one (lowest first): where it
  is defined, then tensorflow_estimator's implementation modules, its API
  modules, TF's shims."""
  if (getattr(value, '__module__', None) == path and
      getattr(value, '__name__', None) == name):
    return 0
  if not path.startswith('tensorflow_estimator.python.estimator'):
    return 3
  return 2 if '.api.' in path or path.endswith('.api') else 1


def _canonical_places(entries):
  """{id(object): 'path:name'} for objects worth an identity (classes,
  functions, constants JSON cannot hold): the lowest _rank place, first in
  order among equals."""
  places = {}
  for path, name, value, record in sorted(entries, key=lambda e: e[:2]):
    if record['kind'] == 'module' or 'value' in record:
      continue
    rank = _rank(path, name, value)
    if id(value) not in places or rank < places[id(value)][0]:
      places[id(value)] = (rank, f'{path}:{name}')
  return {key: place for key, (_, place) in places.items()}


def _module_names(modules):
  """[(path, name, value, record)] of every name the inventory keeps."""
  by_object = {id(m): p for p, m in modules.items()}
  by_name = {m.__name__: p for p, m in modules.items()}
  entries = []
  for path, module in sorted(modules.items()):
    for name, value in sorted(vars(module).items()):
      if name.startswith('__'):
        continue
      record = inventory.describe(value)
      if record is None:
        continue
      if record['kind'] == 'module':
        target = reference_modules.unwrap(value)
        target_path = by_object.get(id(target)) or by_name.get(
            getattr(target, '__name__', None))
        if target_path is None:
          continue  # Not the reference's own module (EXCLUDED).
        record['target'] = target_path
      entries.append((path, name, value, record))
  return entries


def _aliases(tf):
  """({attribute path: module}, [attribute paths `import` also finds])."""
  aliases = dict(reference_modules.api_modules(tf))
  importable = []
  for attribute in aliases:
    try:
      importlib.import_module('tensorflow' + attribute[len('tf'):])
      importable.append(attribute)
    except ImportError:
      pass
  root = importlib.import_module('tensorflow_estimator')
  aliases['tensorflow_estimator.estimator'] = reference_modules.unwrap(
      root.estimator)
  return aliases, sorted(importable)


def _keras_names(tf):
  """{attribute path: sorted names} of tf.keras's estimator modules."""
  found = {}
  for path in ('tf.keras.estimator', 'tf.compat.v1.keras.estimator'):
    module = tf
    for part in path.split('.')[1:]:
      module = getattr(module, part)
    found[path] = sorted(n for n in dir(module) if not n.startswith('_'))
  return found


def build():
  """The inventory of the installed reference (a dict)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  # TF's API as a program sees it, before the walk imports every module.
  aliases, importable = _aliases(tf)
  modules = reference_modules.modules()
  entries = _module_names(modules)
  places = _canonical_places(entries)
  result = {}
  for path, module in modules.items():
    result[path] = {'package': hasattr(module, '__path__'), 'names': {}}
    mirror = reference_modules.mirror_of(module)
    if mirror:
      result[path]['mirror_of'] = mirror
  values = {(path, name): value for path, name, value, _ in entries}
  for path, name, value, record in entries:
    mirror = result[path].get('mirror_of')
    if mirror and (mirror, name) in values and (
        values[(mirror, name)] is value):
      result[path].setdefault('mirrored', []).append(name)
      continue
    place = places.get(id(value))
    if place and place != f'{path}:{name}':
      record = {'kind': record['kind'], 'same_as': place}
    result[path]['names'][name] = record
  by_object = {id(m): p for p, m in modules.items()}
  aliases = {a: by_object[id(m)] for a, m in aliases.items()}
  return {
      'reference': {
          'tensorflow': tf.__version__,
          'tensorflow_estimator': importlib.metadata.version(
              'tensorflow-estimator')},
      'excluded': list(inventory.EXCLUDED),
      'aliases': aliases,
      'importable': importable,
      'keras': _keras_names(tf),
      'modules': result,
  }


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--check', action='store_true',
                      help='compare with the checked-in file; write nothing')
  args = parser.parse_args(argv)
  text = inventory.dumps(build())
  if args.check:
    with open(inventory.PATH, encoding='utf-8') as f:
      if f.read() != text:
        print(f'{inventory.PATH} is out of date: run python -m '
              'scripts.estimator_inventory on the legacy lane.')
        return 1
    print(f'{inventory.PATH} is up to date.')
    return 0
  with open(inventory.PATH, 'w', encoding='utf-8') as f:
    f.write(text)
  data = inventory.load()
  names = sum(len(inventory.names(data, path)) for path in data['modules'])
  print(f'wrote {inventory.PATH}: {len(data["modules"])} modules, '
        f'{names} names')
  return 0


if __name__ == '__main__':
  sys.exit(main())
