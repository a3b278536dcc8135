r"""MIGRATION.md's tables of tensorflow_estimator 2.15's names under the
facade, generated from the inventory and what the installed facade
publishes (inventory_check.py): the counts, every public name of
tf.estimator, tf.compat.v1.estimator and tf.keras.estimator with its
status, and the gaps (trainer/facade/gaps.py). On a facade lane:

  .venv/modern/bin/python -m tests.facade.migration_tables   # rewrite them
"""

import collections
import os
import re
import sys

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'MIGRATION.md')
BEGIN = ('<!-- estimator-inventory:begin '
         '(python -m tests.facade.migration_tables) -->')
END = '<!-- estimator-inventory:end -->'
_E = 'tensorflow_estimator.python.estimator'
# The public API modules the table lists: (column, attribute path).
_COLUMNS = (('`tf.estimator`', 'tf.estimator'),
            ('`tf.compat.v1.estimator`', 'tf.compat.v1.estimator'))


def _gap_of(data, gaps, entry):
  place = entry.record.get('same_as', f'{entry.path}:{entry.name}')
  path, _, name = place.rpartition(':')
  return gaps.gap_for(data, path, name)


def _status(data, gaps, entry):
  if entry is None:
    return '—'
  if entry.status == 'provided':
    return 'provided'
  gap = _gap_of(data, gaps, entry)
  issue = f'; issue {gap.issue}' if gap and gap.issue else ''
  return f'refused ({gap.title}{issue})' if gap else entry.status


def _public_rows(data, gaps, entries):
  """[(name, status per column)] of the public API modules' names."""
  by_key = {e.key: e for e in entries}
  rows = collections.defaultdict(dict)
  for column, root in _COLUMNS:
    for alias, module in data['aliases'].items():
      if alias != root and not alias.startswith(root + '.'):
        continue
      prefix = alias[len(root) + 1:] + '.' if alias != root else ''
      for name, record in sorted(data['modules'][module]['names'].items()):
        if record['kind'] == 'module' or name.startswith('_'):
          continue
        rows[prefix + name][column] = by_key.get(f'{module}:{name}')
  return [(name, [_status(data, gaps, columns.get(c)) for c, _ in _COLUMNS])
          for name, columns in sorted(rows.items())]


def _keras_rows(data, gaps, entries):
  """[(name, status)] of tf.keras.estimator's names (and
  tf.compat.v1.keras.estimator's, the same), which call keras_lib's."""
  by_key = {e.key: e for e in entries}
  return [(f'`{name}` of `tf.keras.estimator`, '
           '`tf.compat.v1.keras.estimator`',
           _status(data, gaps, by_key.get(f'{_E}.keras_lib:{name}')))
          for name in data['keras']['tf.keras.estimator']]


def _short(pattern):
  module, _, name = pattern.partition(':')
  module = module[len(_E) + 1:] if module.startswith(_E + '.') else module
  return module, name


def _gap_names(gap):
  """The gap's names, grouped by module, as Markdown."""
  whole, named = [], collections.defaultdict(list)
  for pattern in gap.names:
    module, name = _short(pattern)
    if module.endswith('.*'):
      continue
    if name == '*':
      whole.append(f'`{module}`')
    else:
      named[module].append(f'`{name}`')
  parts = []
  if whole:
    parts.append('every name of ' + ', '.join(whole))
  parts.extend(f'`{module}`: {", ".join(names)}'
               for module, names in named.items())
  return '; '.join(parts)


def render():
  """The generated part of MIGRATION.md (between BEGIN and END)."""
  from tests.facade import inventory_check  # pylint: disable=g-import-not-at-top
  from trainer.facade import gaps  # pylint: disable=g-import-not-at-top
  from trainer.facade import inventory  # pylint: disable=g-import-not-at-top
  data = inventory.load()
  entries = inventory_check.check_all(data)
  statuses = collections.Counter(e.status for e in entries)
  refused_by_gap = collections.Counter(
      id(_gap_of(data, gaps, e)) for e in entries if e.status == 'refused')
  lines = [
      BEGIN,
      f'tensorflow_estimator {data["reference"]["tensorflow_estimator"]} on '
      f'TF {data["reference"]["tensorflow"]} (with TF 2.15\'s '
      '`tensorflow.python.estimator.*` and `tensorflow.python.tpu.*` shims '
      f'of it): **{len(data["modules"])} modules, {len(entries)} names** (a '
      'name counts once per module path that has it), all importable '
      f'through the facade: **{statuses["provided"]} provided**, '
      f'**{statuses["refused"]} refused** with the reason and the '
      f'alternative, {statuses["missing"]} missing.',
      '',
      '| public name | ' + ' | '.join(c for c, _ in _COLUMNS) + ' |',
      '|---|' + '---|' * len(_COLUMNS)]
  for name, row in _public_rows(data, gaps, entries):
    lines.append(f'| `{name}` | ' + ' | '.join(row) + ' |')
  for name, status in _keras_rows(data, gaps, entries):
    lines.append(f'| {name} | {status} | {status} |')
  lines += [
      '',
      'Not provided (module paths under `tensorflow_estimator.python.'
      'estimator`; their TF 2.15 shims too): each name imports, and '
      'calling or instantiating it raises `UnsupportedApiError: NAME is not '
      'supported by trainer.legacy on TensorFlow 2.20.0: WHY. Instead: '
      'ALTERNATIVE.` (the public name first where it has one).',
      '',
      '| what | names | refused | why | instead |',
      '|---|---|---|---|---|']
  for gap in gaps.GAPS:
    issue = f' (issue {gap.issue})' if gap.issue else ''
    lines.append(f'| {gap.title}{issue} | {_gap_names(gap)} | '
                 f'{refused_by_gap[id(gap)]} | {gap.why} | {gap.instead} |')
  lines.append(END)
  return '\n'.join(lines)


def section(doc):
  """The generated part of `doc`, markers included."""
  match = re.search(re.escape(BEGIN) + r'.*?' + re.escape(END), doc, re.S)
  return match.group(0) if match else None


def main():
  with open(DOC, encoding='utf-8') as f:
    doc = f.read()
  old = section(doc)
  if old is None:
    raise SystemExit(f'{DOC} has no {BEGIN} ... {END} section')
  with open(DOC, 'w', encoding='utf-8') as f:
    f.write(doc.replace(old, render()))
  print(f'rewrote the estimator-inventory section of {DOC}')


if __name__ == '__main__':
  import tests.conftest  # pylint: disable=g-import-not-at-top,unused-import  (installs the facade)
  sys.exit(main())
