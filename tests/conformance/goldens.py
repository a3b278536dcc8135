"""Where the goldens live, how to read one, how to run the cells.

run_cells() runs `python -m tests.conformance.run` in a subprocess (2
logical CPUs need a fresh process) and returns its {cell: observables}.
"""

import json
import os
import subprocess
import sys

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden')
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def load(name):
  """The golden observables of cell `name`, or None."""
  path = os.path.join(GOLDEN_DIR, name + '.json')
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return json.load(f)


def run_cells(api, out, cells='', timeout=1800):
  """Runs the cells on api ('real' or 'project'); {cell: observables}."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get(
                 'PYTHONPATH', ''))
  proc = subprocess.run(
      [sys.executable, '-m', 'tests.conformance.run', f'--api={api}',
       f'--out={out}', f'--cells={cells}'], cwd=REPO_ROOT, env=env,
      capture_output=True, text=True, timeout=timeout)
  if proc.returncode != 0:
    raise RuntimeError(f'conformance run --api={api} exited '
                       f'{proc.returncode}:\n{proc.stderr[-4000:]}')
  with open(out) as f:
    return json.load(f)
