"""Writes the canned-Estimator goldens from the real Estimator (TF 2.15).

  .venv/legacy/bin/python -m tests.canned.regenerate [--wide_deep_only]

Runs canned_program.py (through `python -m trainer.legacy`, which on TF 2.15
changes nothing) and writes, under tests/canned/golden/:
  matrix.json          every cell from its initial values;
  checkpoints/CELL/    the checkpoint of each CHECKED_IN cell after it;
  resume.json          each ROUNDTRIP cell resumed from its checkpoint;
  wide_deep/           wide_deep_program.py's first and second runs.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, 'golden')
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
# Cells whose checkpoints cross lanes both ways: partitioned variables and
# their slots (v1), a shared embedding, SDCA's hash table, Keras slots (v2).
ROUNDTRIP = ('wide_deep_classifier', 'linear_classifier_v1',
             'dnn_classifier_v1', 'linear_sdca', 'rnn_classifier')
# Those whose TF 2.15 checkpoints the repository holds (SDCA's is 4 MB: its
# hash table's empty buckets).
CHECKED_IN = tuple(c for c in ROUNDTRIP if c != 'linear_sdca')


def run(program, *args, python=sys.executable, timeout=3600):
  """Runs a program of this directory under `python -m trainer.legacy`."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=REPO_ROOT)
  result = subprocess.run(
      [python, '-m', 'trainer.legacy', os.path.join(HERE, program)] +
      list(args), cwd=REPO_ROOT, env=env, capture_output=True, text=True,
      timeout=timeout)
  if result.returncode != 0:
    raise RuntimeError(f'{program} {args} exited {result.returncode}:\n'
                       f'{result.stderr[-4000:]}')
  return result


def copy_checkpoint(model_dir, target):
  """The latest checkpoint of model_dir (its files and state, not the graph
  or events) to target."""
  os.makedirs(target, exist_ok=True)
  prefix = tf.train.latest_checkpoint(model_dir)
  for path in glob.glob(prefix + '.*'):
    if not path.endswith('.meta'):  # Estimator builds its own graph.
      shutil.copy(path, target)
  name = os.path.basename(prefix)
  with open(os.path.join(target, 'checkpoint'), 'w') as f:
    f.write(f'model_checkpoint_path: "{name}"\n'
            f'all_model_checkpoint_paths: "{name}"\n')


def _dump(record, path):
  with open(path, 'w') as f:
    json.dump(record, f, indent=1, sort_keys=True)
    f.write('\n')


def main(argv):
  if not tf.__version__.startswith('2.15.'):
    raise SystemExit('regenerate the goldens on TF 2.15 (.venv/legacy).')
  if argv[1:] == ['--wide_deep_only']:
    with tempfile.TemporaryDirectory() as tmp:
      regenerate_wide_deep(tmp)
    return
  with tempfile.TemporaryDirectory() as tmp:
    fresh, resumed = os.path.join(tmp, 'fresh'), os.path.join(tmp, 'resume')
    run('canned_program.py', f'--out={fresh}.json', f'--work_dir={fresh}')
    with open(fresh + '.json') as f:
      matrix = json.load(f)
    errors = {c: r['error'] for c, r in matrix.items() if 'error' in r}
    if errors:
      raise SystemExit(f'cells failed on the real Estimator: {errors}')
    os.makedirs(GOLDEN, exist_ok=True)
    _dump(matrix, os.path.join(GOLDEN, 'matrix.json'))
    shutil.rmtree(os.path.join(GOLDEN, 'checkpoints'), ignore_errors=True)
    for cell in CHECKED_IN:
      copy_checkpoint(
          os.path.join(fresh, cell), os.path.join(GOLDEN, 'checkpoints', cell))
    run('canned_program.py', f'--out={resumed}.json', f'--work_dir={resumed}',
        '--phase=resume', f'--from_dir={fresh}',
        f'--cells={",".join(ROUNDTRIP)}')
    with open(resumed + '.json') as f:
      _dump(json.load(f), os.path.join(GOLDEN, 'resume.json'))
    regenerate_wide_deep(tmp)
  print(f'regenerate: goldens in {GOLDEN}')


def regenerate_wide_deep(tmp):
  """wide_deep_program's first run's checkpoint (golden/wide_deep/first)
  and its continuation's record (golden/wide_deep/continue.json)."""
  first = os.path.join(tmp, 'wide_deep_first')
  run('wide_deep_program.py', '--phase=first', f'--model_dir={first}')
  target = os.path.join(GOLDEN, 'wide_deep')
  shutil.rmtree(target, ignore_errors=True)
  copy_checkpoint(first, os.path.join(target, 'first'))
  out = os.path.join(tmp, 'wide_deep_continue.json')
  run('wide_deep_program.py', '--phase=continue',
      f'--model_dir={os.path.join(tmp, "wide_deep_continue")}',
      f'--from_dir={os.path.join(target, "first")}', f'--out={out}')
  with open(out) as f:
    _dump(json.load(f), os.path.join(target, 'continue.json'))


if __name__ == '__main__':
  main(sys.argv)
