r"""Migrates each corpus codebase with trainer.migrate and runs what it wrote.

  .venv/modern/bin/python scripts/corpus_migrate.py [CASE ...] \
      [--reports=DIR] [--work=DIR]

CASE: mnist_tpu tpu_resnet tpu_resnet_rs efficientnet simclr tapas (none:
all). For each, with the corpus' tiny data (corpus_data.py) and the
command-line flags of ../shared/corpus/run.sh:
  1. `python -m trainer.main --runner=tf2` trains 2 steps (the checkpoint
     an Estimator model_dir holds: same names);
  2. `python -m trainer.migrate` writes the TF2 program, converts that
     checkpoint and compares 2 training steps and 1 evaluation batch (its
     report must say equivalent);
  3. the generated train.py trains 1 step on from checkpoint/, evaluates 1
     batch and exports, in a process where this project is not importable.
One line per case, `migrate/CASE: ok ...` or `migrate/CASE: FAIL <why>`,
with its seconds; then `corpus-migrate: N passed, M failed`; exit 1 if any
failed. --reports keeps each report.json as CASE.json (CI keeps them).
Environment: SHARED_DIR (default ../shared), CORPUS_DATA_DIR.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get('SHARED_DIR', os.path.join(ROOT, '..', 'shared'))
CORPUS = os.path.join(SHARED, 'corpus')
DATA = os.environ.get('CORPUS_DATA_DIR', '/tmp/tpu_trainer_corpus_data')
PYTHON = sys.executable
TIMEOUT = 1800

_RESNET_PO = ('num_train_images=1437,num_eval_images=360,'
              'transpose_input=false,use_cache=false,num_parallel_calls=2')
_RS_PO = ('moving_average_decay=0.9999,bn_momentum=0.0,se_ratio=0.25,'
          'use_resnetd_stem=true,resnetd_shortcut=true,'
          'replace_stem_max_pool=true,dropout_rate=0.25')
_RESNET = ['--model=tpu_resnet_case:model_fn',
           '--input=tpu_resnet_case:input_fn', '--use_tpu=false',
           f'--data_dir={DATA}/imagenet', '--resnet_depth=18',
           '--image_size=32', '--num_label_classes=10',
           '--train_batch_size=32', '--eval_batch_size=40', '--num_cores=1',
           '--precision=float32']
# run.sh's flags of each case (its own command lines), steps aside.
CASES = {
    'mnist_tpu': ['--model=mnist_tpu_case:model_fn',
                  '--input=mnist_tpu_case:input_fn', '--use_tpu=false',
                  f'--data_dir={DATA}/mnist', '--learning_rate=0.05',
                  '--train_batch_size=64', '--eval_batch_size=40'],
    'tpu_resnet': _RESNET + [f'--params_override={_RESNET_PO}'],
    'tpu_resnet_rs': _RESNET + [f'--params_override={_RESNET_PO},{_RS_PO}'],
    'efficientnet': [
        '--model=efficientnet_case:model_fn',
        '--input=efficientnet_case:input_fn', '--use_tpu=false',
        f'--data_dir={DATA}/imagenet', '--model_name=efficientnet-b0',
        '--input_image_size=32', '--width_coefficient=0.5',
        '--depth_coefficient=0.5', '--num_label_classes=10',
        '--num_train_images=1437', '--num_eval_images=360',
        '--transpose_input=false', '--num_parallel_calls=2',
        '--base_learning_rate=0.5', '--lr_warmup_epochs=0.1',
        '--use_bfloat16=false', '--train_batch_size=32',
        '--eval_batch_size=40'],
    'simclr': ['--model=simclr_case:model_fn', '--input=simclr_case:input_fn',
               '--use_tpu=false', '--resnet_depth=18', '--image_size=40',
               '--learning_rate=0.3', '--weight_decay=1e-4',
               '--train_batch_size=32', '--eval_batch_size=32',
               '--warmup_epochs=0.1', '--train_summary_steps=10'],
    'tapas': ['--model=tapas_case:model_fn', '--input=tapas_case:input_fn',
              '--learning_rate=5e-4', '--train_batch_size=32',
              '--eval_batch_size=32'],
}
STEPS = ['--train_steps=2', '--iterations_per_loop=2', '--eval_steps=1']


def _run(args, env, cwd=ROOT):
  result = subprocess.run(args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)
  return result


def _last_error(result):
  lines = [l for l in result.stderr.strip().splitlines() if l.strip()]
  return lines[-1][:300] if lines else f'exit {result.returncode}'


def _project_env():
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
              PYTHONPATH=os.pathsep.join([CORPUS, ROOT]))


def _clean_env(out_dir):
  """Only OUT's parent and the corpus (the team's modules) on the path."""
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  env.update(TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=os.pathsep.join([os.path.dirname(out_dir), CORPUS]))
  return env


def migrate_case(name, work, reports):
  """(ok, text) of one case."""
  flags = CASES[name] + STEPS
  estimator_dir = os.path.join(work, name, 'estimator')
  out = os.path.join(work, name, f'{name}_tf2')
  env = _project_env()
  trained = _run([PYTHON, '-m', 'trainer.main', '--runner=tf2', '--mode=train',
                  f'--model_dir={estimator_dir}'] + flags, env)
  if trained.returncode:
    return False, f'training the checkpoint failed: {_last_error(trained)}'
  migrated = _run([PYTHON, '-m', 'trainer.migrate', f'--model_dir={estimator_dir}',
                   f'--output_dir={out}', '--compare_steps=2',
                   '--compare_eval_steps=1'] + flags, env)
  report_path = os.path.join(out, 'report.json')
  if not os.path.exists(report_path):
    return False, f'trainer.migrate: {_last_error(migrated)}'
  with open(report_path, encoding='utf-8') as f:
    report = json.load(f)
  if reports:
    shutil.copy(report_path, os.path.join(reports, f'{name}.json'))
  failed = [c['name'] for c in report['comparisons'] if not c['ok']]
  unconverted = [c['construct'] for c in report['unconverted']]
  if not report['equivalent']:
    return False, (f'not equivalent: failed {failed}, not carried over '
                   f'{unconverted}')
  probe = _run([PYTHON, '-c', 'import trainer'], _clean_env(out), cwd=work)
  if probe.returncode == 0:
    return False, 'the project is importable in the clean environment'
  model_dir = os.path.join(work, name, 'continued')
  ran = _run([PYTHON, os.path.join(out, 'train.py'), f'--model_dir={model_dir}',
              f'--steps={report["global_step"] + 1}',
              '--iterations_per_loop=1', '--eval_steps=1'], _clean_env(out),
             cwd=work)
  step = report['global_step'] + 1
  if ran.returncode or f'global_step: {step}' not in ran.stdout or (
      not os.path.isdir(os.path.join(model_dir, 'saved_model'))):
    return False, f'generated train.py: {_last_error(ran)}'
  worst = max((c['max_abs_diff'] or 0.0) for c in report['comparisons']
              if c['name'] != 'moving statistics')
  return True, (f'ok equivalent, max |diff| {worst:.2g}, '
                f'{report["generated_lines_total"]} lines generated, '
                f'{len(report["wrapped"])} part(s) wrapped; train.py trained '
                f'to step {step}')


def main():
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('cases', nargs='*', default=list(CASES))
  parser.add_argument('--reports')
  parser.add_argument('--work')
  args = parser.parse_args()
  unknown = [c for c in args.cases if c not in CASES]
  if unknown:
    parser.error(f'unknown case(s) {unknown}; cases: {" ".join(CASES)}')
  if not os.path.isfile(os.path.join(CORPUS, 'run.sh')):
    sys.exit(f'corpus-migrate: {CORPUS}/run.sh not found (set SHARED_DIR)')
  made = subprocess.run([PYTHON, os.path.join(CORPUS, 'corpus_data.py')],
                        capture_output=True, text=True,
                        env=dict(os.environ, CORPUS_DATA_DIR=DATA))
  if made.returncode:
    sys.exit(f'corpus-migrate: making the data failed: {_last_error(made)}')
  if args.reports:
    os.makedirs(args.reports, exist_ok=True)
  work = args.work or tempfile.mkdtemp(prefix='corpus-migrate-')
  passed = failed = 0
  for name in args.cases:
    start = time.time()
    try:
      ok, text = migrate_case(name, work, args.reports)
    except subprocess.TimeoutExpired as e:
      ok, text = False, f'timed out: {" ".join(e.cmd[:3])}'
    print(f'migrate/{name}: {text if ok else "FAIL " + text} '
          f'[{time.time() - start:.0f} s]', flush=True)
    passed, failed = passed + ok, failed + (not ok)
  if not args.work and not failed:
    shutil.rmtree(work, ignore_errors=True)
  print(f'corpus-migrate: {passed} passed, {failed} failed')
  return 1 if failed else 0


if __name__ == '__main__':
  sys.exit(main())
