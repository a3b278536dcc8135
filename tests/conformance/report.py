"""Prints how a lane's results compare with the goldens, cell by cell.

  python -m tests.conformance.report RESULTS.json [--lane=2.15|new] [-v]

RESULTS.json: what tests.conformance.run --api=project wrote. Each cell is
'match', 'refused' (a project error before any step), 'error' (any other
exception) or 'differs' (first differences shown with -v), beside its
expectation in cells.py; the last line counts them.
"""

import argparse
import collections
import json
import sys

from tests.conformance import cells as cells_lib
from tests.conformance import compare
from tests.conformance import goldens


def outcome(cell, got):
  """('match' | 'refused' | 'error' | 'differs', details) of one cell."""
  golden = goldens.load(cell.name)
  if golden is None:
    return 'differs', ['no golden']
  refusal = got.get('refusal') or {}
  if got.get('error') and not golden.get('error'):
    if refusal.get('trainer_error') and refusal.get('steps_run') == 0:
      return 'refused', [f'{got["error"]}: {refusal.get("message")}']
    return 'error', [f'{got["error"]} in {refusal.get("action")}: '
                     f'{refusal.get("message")}']
  diffs = compare.differences(golden, got)
  return ('differs', diffs) if diffs else ('match', [])


def main(argv):
  parser = argparse.ArgumentParser()
  parser.add_argument('results')
  parser.add_argument('--lane', default='new')
  parser.add_argument('-v', action='store_true')
  args = parser.parse_args(argv)
  with open(args.results) as f:
    results = json.load(f)
  counts = collections.Counter()
  for cell in cells_lib.CELLS:
    if cell.name not in results:
      continue
    kind, details = outcome(cell, results[cell.name])
    expected = cell.expectation(args.lane)[0]
    counts[kind] += 1
    flag = '' if kind == expected else f'  (expected {expected})'
    print(f'{kind:8} {cell.name} {results[cell.name].get("time")}s{flag}')
    if args.v:
      for line in details[:8]:
        print(f'           {line[:300]}')
  print(', '.join(f'{n} {k}' for k, n in sorted(counts.items())))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
