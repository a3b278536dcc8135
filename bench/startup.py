"""trainer.main's start-up to its first training step, per lane and runner.

  python -m bench.startup              # 3 rounds, every lane in .venv/
  python -m bench.startup --smoke      # 1 round, this Python, 1 runner (CI)

Runs, as a user does, `LANE/bin/python -m trainer.main --mode=train
--train_steps=1 --model_dir=NEW` (the MLP on the embedded digits) for each
lane's runners (legacy: estimator and tf2; modern and newest: tf2, the
only runner with no tf.estimator) and, for scale, `python -c 'import
tensorflow'`. Timed from the process's start to the end of its first
training loop (its `train | step: 1` progress line on stderr, a loop of one
step) and to its exit (the final checkpoint and teardown), with the CPU
seconds of the whole process. Printed per lane and runner: the median and
range over the rounds of each figure; the rounds interleave every lane so
that a machine shared with other work slows them alike.
This driver imports no TensorFlow: any Python runs it.
"""

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# lane -> the runners trainer.main has there.
LANE_RUNNERS = {'legacy': ['estimator', 'tf2'], 'modern': ['tf2'],
                'newest': ['tf2']}
FIRST_STEP = re.compile(r'train \| step: \d+')


def _python(lane):
  return os.path.join(ROOT, '.venv', lane, 'bin', 'python')


def _children_cpu():
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def _timed(command, timeout):
  """{'first_step_s', 'exit_s', 'cpu_s'} of one run of COMMAND."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=ROOT,
             CUDA_VISIBLE_DEVICES='')
  env.pop('TF_CONFIG', None)
  cpu = _children_cpu()
  start = time.perf_counter()
  proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
  first, tail = [], []

  def read():
    for line in proc.stdout:
      tail.append(line)
      del tail[:-40]
      if not first and FIRST_STEP.search(line):
        first.append(time.perf_counter() - start)

  reader = threading.Thread(target=read, daemon=True)
  reader.start()
  code = proc.wait(timeout=timeout)
  elapsed = time.perf_counter() - start
  reader.join(10)
  if code != 0:
    raise RuntimeError(f'{" ".join(command)} exited {code}:\n'
                       + ''.join(tail)[-3000:])
  figures = {'exit_s': elapsed, 'cpu_s': _children_cpu() - cpu}
  if first:
    figures['first_step_s'] = first[0]
  return figures


def _cases(pythons, runners_per_lane=None):
  """[(lane, what, command-builder(model_dir))] for every lane of PYTHONS
  ({lane: its python}) and its runners (the first RUNNERS_PER_LANE)."""
  cases = []
  for lane, python in pythons.items():
    cases.append((lane, 'import tensorflow',
                   lambda _, p=python: [p, '-c', 'import tensorflow']))
    for runner in LANE_RUNNERS[lane][:runners_per_lane]:
      cases.append((lane, f'trainer.main --runner={runner}',
                    lambda d, p=python, r=runner: [
                        p, '-m', 'trainer.main', '--mode=train',
                        '--train_steps=1', f'--runner={r}',
                        f'--model_dir={d}']))
  return cases


def _cell(values):
  if not values:
    return '-'
  return (f'{statistics.median(values):6.2f} '
          f'({min(values):.2f}-{max(values):.2f})')


def main(argv):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--smoke', action='store_true',
                      help='1 round, this Python only (CI)')
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--lanes', default=','.join(LANE_RUNNERS),
                      help='lanes of .venv/ to run, comma-separated')
  parser.add_argument('--timeout', type=int, default=600)
  flags = parser.parse_args(argv[1:])
  rounds = 1 if flags.smoke else flags.rounds
  if flags.smoke:
    lane = os.path.basename(os.path.dirname(os.path.dirname(
        os.path.abspath(sys.executable))))
    lane = next((name for name in LANE_RUNNERS if lane.startswith(name)),
                'modern')
    pythons = {lane: sys.executable}
  else:
    pythons = {lane: _python(lane) for lane in flags.lanes.split(',')
               if os.path.exists(_python(lane))}
    if not pythons:
      parser.error('no lane of .venv/: bash scripts/setup_env.sh LANE')
  lanes = list(pythons)
  cases = _cases(pythons, 1 if flags.smoke else None)
  print(f'bench.startup: {rounds} round(s), lanes {",".join(lanes)}; load '
        f'{os.getloadavg()[0]:.2f}', flush=True)
  results = {}
  work = tempfile.mkdtemp(prefix='bench_startup_')
  try:
    for index in range(rounds):
      for lane, what, build in cases:
        model_dir = tempfile.mkdtemp(dir=work)
        figures = _timed(build(model_dir), flags.timeout)
        results.setdefault((lane, what), []).append(figures)
        print(f'round {index + 1} {lane:<7} {what:<30} '
              + '  '.join(f'{k} {v:.2f}' for k, v in sorted(figures.items())),
              flush=True)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  print(f'\n{"lane":<8}{"what":<32}{"to first step, s":>22}'
        f'{"to exit, s":>22}{"CPU s":>22}')
  for (lane, what), runs in results.items():
    cells = [_cell([r[k] for r in runs if k in r])
             for k in ('first_step_s', 'exit_s', 'cpu_s')]
    print(f'{lane:<8}{what:<32}' + ''.join(f'{c:>22}' for c in cells))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
