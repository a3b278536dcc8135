"""Writes the goldens: every cell run under the real Estimator of TF 2.15.

  .venv/legacy/bin/python -m tests.conformance.regenerate [--cells=a,b]

Runs tests.conformance.run --api=real in a fresh process and writes
golden/CELL.json per cell, without the run's seconds; cells no longer in
cells.py lose their golden.
"""

import argparse
import json
import os
import sys
import tempfile

from tests.conformance import goldens


def main(argv):
  parser = argparse.ArgumentParser()
  parser.add_argument('--cells', default='')
  args = parser.parse_args(argv)
  from tests.conformance import cells as cells_lib  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory() as tmp:
    results = goldens.run_cells('real', os.path.join(tmp, 'real.json'),
                                args.cells)
  os.makedirs(goldens.GOLDEN_DIR, exist_ok=True)
  for name, obs in results.items():
    obs.pop('time', None)
    obs.pop('refusal', None)
    with open(os.path.join(goldens.GOLDEN_DIR, name + '.json'), 'w') as f:
      json.dump(obs, f, indent=1, sort_keys=True)
      f.write('\n')
  if not args.cells:
    for stale in set(os.listdir(goldens.GOLDEN_DIR)) - {
        c.name + '.json' for c in cells_lib.CELLS}:
      os.remove(os.path.join(goldens.GOLDEN_DIR, stale))
  print(f'regenerate: {len(results)} goldens in {goldens.GOLDEN_DIR}')
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv[1:]))
