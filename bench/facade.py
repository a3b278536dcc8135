"""The facade against the Estimator it replaces, program by program.

  .venv/legacy/bin/python -m bench.facade               # 3 rounds, modern
  .venv/legacy/bin/python -m bench.facade --lanes=modern,newest
  .venv/legacy/bin/python -m bench.facade --smoke       # seconds: CI

Runs each unmodified Estimator program of bench/programs/ (their figures:
bench/programs/timing.py) as a user would, one process per run:
  reference  .venv/legacy/bin/python PROGRAM    (TF 2.15.1, real Estimator)
  LANE       .venv/LANE/bin/python -m trainer.legacy PROGRAM  (the facade)
and plain_session.py (the same graph as dnn.py without Estimator) and
cluster_session.py (cluster.py's training without Estimator, on the same
loopback cluster) as `.venv/LANE/bin/python PROGRAM` on every lane, so that
their ratios are what TensorFlow itself costs. The sides of a program run one after the other
within a round, their order turning every round, so that a machine shared
with other work slows both alike; the ratios facade/reference are taken per
round and reported as their median and range (MIN-MAX) over the rounds.
The cluster programs run a loopback TF_CONFIG cluster (chief, 2 workers,
1 ps on localhost ports) per side; its steps/s is global steps/s on the
chief. The last line: `facade/reference steps_per_sec: MEDIAN (MIN-MAX),
peak_rss: MEDIAN` over every round of every Estimator program on the first
of --lanes (the TensorFlow-only programs left out: no Estimator in them).
This driver imports no TensorFlow: any Python runs it.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, 'bench', 'programs')
# name -> (script, extra flags, runs through trainer.legacy).
ESTIMATOR_PROGRAMS = {
    'dnn': ('dnn.py', [], True),
    'wide_deep': ('wide_deep.py', [], True),
    'custom': ('custom.py', [], True),
    'tpu': ('tpu.py', [], True),
    'mirrored': ('mirrored.py', [], True),
    'cluster': ('cluster.py', [], True),
}
TF_PROGRAMS = {
    'plain_session': ('plain_session.py', ['--session=plain'], False),
    'monitored_session': ('plain_session.py', ['--session=monitored'], False),
    'cluster_session': ('cluster_session.py', [], False),
}
CLUSTER_PROGRAMS = ('cluster', 'cluster_session')
ALL = {**ESTIMATOR_PROGRAMS, **TF_PROGRAMS}
DEFAULT = list(ALL)
SMOKE = ['dnn']
FIGURES = ['steps_per_sec', 'train_s', 'evaluate_s', 'predict_s', 'export_s',
           'cpu_s', 'peak_rss_mb', 'serve_ms']
TF_VERSIONS = {'legacy': '2.15', 'modern': '2.20', 'newest': '2.21'}


def _python(lane):
  return os.path.join(ROOT, '.venv', lane, 'bin', 'python')


def _command(lane, program, through_facade, args):
  script, extra, _ = ALL[program]
  path = os.path.join(PROGRAMS, script)
  if lane == 'legacy' or not through_facade:
    return [_python(lane), path] + extra + args
  return [_python(lane), '-m', 'trainer.legacy', path] + extra + args


def _free_ports(n):
  sockets = [socket.socket() for _ in range(n)]
  for s in sockets:
    s.bind(('localhost', 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def _env(lane='legacy'):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=ROOT,
             CUDA_VISIBLE_DEVICES='')
  if lane != 'legacy':
    # Keras 2 (tf-keras) for tf.compat.v1.layers, as the facade selects it.
    env['TF_USE_LEGACY_KERAS'] = '1'
  env.pop('TF_CONFIG', None)
  return env


def _run_one(lane, program, args, work, timeout):
  """The figures of one run of PROGRAM on LANE: {figure: value}."""
  model_dir = tempfile.mkdtemp(dir=work, prefix=f'{program}_{lane}_')
  out = os.path.join(model_dir, 'figures.json')
  args = args + [f'--model_dir={model_dir}/model', f'--out={out}']
  through = ALL[program][2]
  log = os.path.join(model_dir, 'log')
  if program in CLUSTER_PROGRAMS:
    return _run_cluster(lane, program, args, model_dir, out, log, timeout)
  with open(log, 'w') as f:
    code = subprocess.run(_command(lane, program, through, args), stdout=f,
                          stderr=subprocess.STDOUT, env=_env(lane),
                          timeout=timeout, check=False).returncode
  return _read(out, log, code, program, lane)


def _read(out, log, code, program, lane):
  if code != 0 or not os.path.exists(out):
    with open(log) as f:
      tail = f.read()[-3000:]
    raise RuntimeError(f'{program} on {lane} exited {code}:\n{tail}')
  with open(out) as f:
    return json.load(f)


def _run_cluster(lane, program, args, model_dir, out, log, timeout):
  """chief, worker 0 and 1, ps 0 on localhost; the chief's figures."""
  ports = _free_ports(4)
  cluster = {'chief': [f'localhost:{ports[0]}'],
             'worker': [f'localhost:{ports[1]}', f'localhost:{ports[2]}'],
             'ps': [f'localhost:{ports[3]}']}
  tasks = [('ps', 0), ('worker', 0), ('worker', 1), ('chief', 0)]
  procs = []
  try:
    for kind, index in tasks:
      env = _env(lane)
      env['TF_CONFIG'] = json.dumps(
          {'cluster': cluster, 'task': {'type': kind, 'index': index}})
      task_args = list(args)
      if kind != 'chief':
        task_args = [a for a in task_args if not a.startswith('--out=')]
      f = open(f'{log}.{kind}{index}', 'w')
      procs.append((kind, f, subprocess.Popen(
          _command(lane, program, ALL[program][2], task_args), stdout=f,
          stderr=subprocess.STDOUT, env=env)))
    deadline = time.time() + timeout
    code = None
    for kind, _, proc in procs:
      if kind == 'ps':
        continue
      code = proc.wait(timeout=max(1, deadline - time.time()))
      if code != 0:
        break
  finally:
    for _, f, proc in procs:
      if proc.poll() is None:
        proc.kill()
        proc.wait()
      f.close()
  return _read(out, f'{log}.chief0' if code == 0 else f'{log}.{kind}0'
               if kind != 'worker' else f'{log}.worker0', code, program,
               lane)


def _ratios(runs, program, lane, figure):
  """facade/reference of FIGURE per round where both sides have it."""
  ratios = []
  for round_runs in runs:
    ref = round_runs.get((program, 'legacy'), {}).get(figure)
    fac = round_runs.get((program, lane), {}).get(figure)
    if ref and fac is not None:
      ratios.append(fac / ref)
  return ratios


def _summary(values):
  if not values:
    return '-'
  return (f'{statistics.median(values):.2f} '
          f'({min(values):.2f}-{max(values):.2f})')


def _value(runs, program, lane, figure):
  values = [r[(program, lane)][figure] for r in runs
            if figure in r.get((program, lane), {})]
  if not values:
    return '-'
  return f'{statistics.median(values):.4g}'


def report(runs, programs, lanes):
  """The table (stdout lines), then the summary line of lanes[0]."""
  lines = []
  for lane in lanes:
    lines.append(f'\n## facade on TF {TF_VERSIONS.get(lane, lane)} ({lane}) '
                 f'/ TF 2.15.1 Estimator: median (range) over '
                 f'{len(runs)} round(s)')
    lines.append(f'{"program":<18}' + ''.join(f'{f:>22}' for f in FIGURES))
    for program in programs:
      row = [_summary(_ratios(runs, program, lane, f)) for f in FIGURES]
      lines.append(f'{program:<18}' + ''.join(f'{c:>22}' for c in row))
  lines.append('\n## absolute medians (reference | ' + ' | '.join(lanes) + ')')
  for program in programs:
    for figure in FIGURES:
      cells = [_value(runs, program, lane, figure)
               for lane in ['legacy'] + lanes]
      if any(c != '-' for c in cells):
        lines.append(f'{program:<18}{figure:<15}' + ' | '.join(cells))
  estimator = [p for p in programs if p in ESTIMATOR_PROGRAMS]
  for lane in reversed(lanes):
    steps = [r for p in estimator
             for r in _ratios(runs, p, lane, 'steps_per_sec')]
    rss = [r for p in estimator for r in _ratios(runs, p, lane,
                                                 'peak_rss_mb')]
    rss_text = f'{statistics.median(rss):.2f}' if rss else '-'
    tail = '' if lane == lanes[0] else f'  [TF {TF_VERSIONS.get(lane, lane)}]'
    lines.append(f'facade/reference steps_per_sec: {_summary(steps)}, '
                 f'peak_rss: {rss_text}{tail}')
  return lines


def main(argv):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--smoke', action='store_true',
                      help='1 round, few steps, dnn only (CI)')
  parser.add_argument('--rounds', type=int, default=3)
  parser.add_argument('--lanes', default='modern',
                      help='facade lanes, comma-separated (modern, newest)')
  parser.add_argument('--programs', default=','.join(DEFAULT),
                      help='of: ' + ','.join(ALL))
  parser.add_argument('--train_steps', type=int, default=2000)
  parser.add_argument('--warmup_steps', type=int, default=200)
  parser.add_argument('--timeout', type=int, default=900)
  parser.add_argument('--json_out', help='also write every run\'s figures')
  parser.add_argument('--keep', action='store_true',
                      help='keep the model_dirs and logs (named at the end)')
  flags = parser.parse_args(argv[1:])
  lanes = [lane for lane in flags.lanes.split(',') if lane]
  programs = [p for p in flags.programs.split(',') if p]
  rounds, steps, warmup = flags.rounds, flags.train_steps, flags.warmup_steps
  if flags.smoke:
    rounds, steps, warmup = 1, 60, 20
    if flags.programs == parser.get_default('programs'):
      programs = SMOKE
  unknown = [p for p in programs if p not in ALL]
  if unknown:
    parser.error(f'unknown programs {unknown}; known: {sorted(ALL)}')
  missing = [lane for lane in ['legacy'] + lanes
             if not os.path.exists(_python(lane))]
  if missing:
    parser.error(f'no .venv/LANE for {missing}: bash scripts/setup_env.sh LANE')
  args = [f'--train_steps={steps}', f'--warmup_steps={warmup}']
  if flags.smoke:
    args += ['--eval_steps=2', '--serve_calls=10']
  work = tempfile.mkdtemp(prefix='bench_facade_')
  print(f'bench.facade: {rounds} round(s), {steps} steps, programs '
        f'{",".join(programs)}, lanes legacy,{",".join(lanes)}; load '
        f'{os.getloadavg()[0]:.2f}', flush=True)
  runs, failed = [], []
  for index in range(rounds):
    round_runs = {}
    for program in programs:
      sides = ['legacy'] + lanes
      if index % 2:
        sides.reverse()
      for lane in sides:
        start = time.perf_counter()
        try:
          figures = _run_one(lane, program, args, work, flags.timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
          failed.append(f'round {index + 1} {program} {lane}: {e}')
          print(f'round {index + 1} {program:<18} {lane:<7} FAILED: '
                f'{str(e).strip().splitlines()[-1]}', flush=True)
          continue
        round_runs[(program, lane)] = figures
        print(f'round {index + 1} {program:<18} {lane:<7} '
              f'{figures.get("steps_per_sec", 0):8.1f} steps/s  '
              f'rss {figures.get("peak_rss_mb", 0):6.0f} MB  '
              f'({time.perf_counter() - start:.0f} s)', flush=True)
    runs.append(round_runs)
  if flags.json_out:
    with open(flags.json_out, 'w') as f:
      json.dump([{f'{p} {l}': v for (p, l), v in r.items()} for r in runs], f)
  for line in report(runs, programs, lanes):
    print(line)
  if failed:
    print(f'bench.facade: {len(failed)} run(s) failed:', file=sys.stderr)
    for text in failed:
      print(text, file=sys.stderr)
  if flags.keep:
    print(f'bench.facade: model_dirs and logs in {work}', file=sys.stderr)
  else:
    subprocess.run(['rm', '-rf', work], check=False)
  return 1 if failed else 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
