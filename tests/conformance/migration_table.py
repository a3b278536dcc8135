"""MIGRATION.md's conformance table, generated from the matrix.

  python -m tests.conformance.migration_table          # rewrites the table
  python -m tests.conformance.migration_table --check  # exit 1 if stale

One row per cell: its axis, what it exercises and its expected outcome on
each lane (cells.Cell.expectation, which tests/conformance/conformance_test.py holds
each lane to), written between the BEGIN and END marker comments.
"""

import argparse
import os
import sys

from tests.conformance import cells as cells_lib
from tests.conformance import goldens

MIGRATION_MD = os.path.join(goldens.REPO_ROOT, 'MIGRATION.md')
BEGIN = ('<!-- conformance-table:begin '
         '(python -m tests.conformance.migration_table) -->')
END = '<!-- conformance-table:end -->'
LANES = (('new', 'TF ≥ 2.16 (facade)'),)


def _outcome(cell, lane):
  kind, detail = cell.expectation(lane)
  if kind == 'refused':
    return f'refused before training: `{detail}`'
  if kind == 'differs':
    return f'differs (open): {detail}'
  golden = goldens.load(cell.name) or {}
  if golden.get('error'):
    return f'matches (raises `{golden["error"]}`, as Estimator)'
  return 'matches'


def render():
  """The table's Markdown, markers included."""
  counts = {lane: {} for lane, _ in LANES}
  rows = []
  for cell in cells_lib.CELLS:
    outcomes = [_outcome(cell, lane) for lane, _ in LANES]
    for (lane, _), outcome in zip(LANES, outcomes):
      key = outcome.split(' ')[0].split(':')[0]
      counts[lane][key] = counts[lane].get(key, 0) + 1
    doc = cell.doc.replace('|', '\\|')
    rows.append(f'| `{cell.name}` | {cell.axis} | {doc} | '
                + ' | '.join(o.replace('|', '\\|') for o in outcomes) + ' |')
  summary = '; '.join(
      f'{title}: ' + ', '.join(f'{n} {k}' for k, n in sorted(
          counts[lane].items())) for lane, title in LANES)
  head = ['| cell | axis | program | ' + ' | '.join(t for _, t in LANES)
          + ' |', '|---|---|---|' + '---|' * len(LANES)]
  return '\n'.join([
      BEGIN, '',
      f'{len(cells_lib.CELLS)} cells, each compared with the real Estimator '
      f'of TF 2.15 (goldens in `tests/conformance/golden/`): {summary}.', '',
      *head, *rows, '', END])


def current(text):
  """The table block now in text, or None."""
  if BEGIN not in text or END not in text:
    return None
  start = text.index(BEGIN)
  return text[start:text.index(END, start) + len(END)]


def main(argv):
  parser = argparse.ArgumentParser()
  parser.add_argument('--check', action='store_true')
  args = parser.parse_args(argv)
  with open(MIGRATION_MD) as f:
    text = f.read()
  block = render()
  if args.check:
    if current(text) != block:
      print('MIGRATION.md conformance table is stale: run python -m '
            'tests.conformance.migration_table', file=sys.stderr)
      return 1
    return 0
  old = current(text)
  if old is None:
    raise SystemExit(f'MIGRATION.md has no {BEGIN} ... {END} markers.')
  with open(MIGRATION_MD, 'w') as f:
    f.write(text.replace(old, block))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
