"""Writes the facade tests' goldens from the real Estimator (TF 2.15).

  .venv/legacy/bin/python -m tests.facade.regenerate [keras] [kmeans]
      [tpu_checks] [tpu_embedding] [warm_start]

Runs keras_program.py under `python -m trainer.legacy` (which on TF 2.15
changes nothing: tf.keras.estimator.model_to_estimator is tensorflow_
estimator's) and writes golden/keras.json: every cell from its initial
values, and under `resumed` the RESUMED cells continued from their own
model dirs for as many steps again; golden/keras_checkpoints/CELL/ holds
each RESUMED cell's model dir after its fresh run (checkpoints only: the
latest and the first one made from the Keras weights, under keras/), which
keras_test resumes through the facade; golden/kmeans.json: every
kmeans_program.py cell; golden/tpu_checks.json: tpu_checks.py's cases under
TF 2.15's TPUEstimator; golden/tpu_embedding.json: tpu_embedding_program.py's
cells and error cases; golden/warm_start.json: warm_start_program.py's.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, 'golden')
CHECKPOINTS = os.path.join(GOLDEN, 'keras_checkpoints')
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
# Cells whose checkpoints the other lane resumes: both checkpoint formats.
RESUMED = ('functional_saver', 'functional_checkpoint')
# A hang guard only (a loaded 2-core machine), never a speed bound.
CLUSTER_TIMEOUT = 600


def run(program, *args, python=sys.executable, timeout=1800):
  """Runs a program of this directory under `python -m trainer.legacy`;
  the JSON it wrote to --out."""
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, 'out.json')
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=REPO_ROOT)
    result = subprocess.run(
        [python, '-m', 'trainer.legacy', os.path.join(HERE, program),
         f'--out={out}'] + list(args), cwd=REPO_ROOT, env=env,
        capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0 or not os.path.exists(out):
      raise RuntimeError(f'{program} {args} exited {result.returncode}:\n'
                         f'{result.stderr[-4000:]}')
    with open(out) as f:
      return json.load(f)


def copy_checkpoints(model_dir, target):
  """model_dir's latest checkpoint and its keras/ one (files and state
  only: no graph, no events) to target."""
  for sub in ('', 'keras'):
    source = os.path.join(model_dir, sub)
    prefix = tf_latest_checkpoint(source)
    os.makedirs(os.path.join(target, sub), exist_ok=True)
    for path in glob.glob(prefix + '.*'):
      if not path.endswith('.meta'):
        shutil.copy(path, os.path.join(target, sub))
    name = os.path.basename(prefix)
    with open(os.path.join(target, sub, 'checkpoint'), 'w') as f:
      f.write(f'model_checkpoint_path: "{name}"\n'
              f'all_model_checkpoint_paths: "{name}"\n')


def tf_latest_checkpoint(directory):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.train.latest_checkpoint(directory)


def run_cluster(work, python=sys.executable, max_steps=30):
  """keras_program.py --cluster as every task of a loopback cluster (a
  chief, a worker, a ps, an evaluator): {task: its record, with `exit`}."""
  sys.path.insert(0, REPO_ROOT)
  from scripts import local_cluster  # pylint: disable=g-import-not-at-top
  model_dir = os.path.join(work, 'model')
  command = [python, '-m', 'trainer.legacy',
             os.path.join(HERE, 'keras_program.py'), '--cluster',
             f'--model_dir={model_dir}', f'--max_steps={max_steps}',
             f'--out={work}']
  cluster = local_cluster.LocalCluster(
      command, os.path.join(work, 'logs'),
      local_cluster.cluster_spec(chief=1, workers=1, ps=1, evaluator=1),
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=REPO_ROOT),
      cwd=REPO_ROOT)
  cluster.start()
  try:
    exits = cluster.wait_all(CLUSTER_TIMEOUT)
  finally:
    cluster.stop()
  records = {}
  for task in cluster.tasks:
    if task.type == 'ps':
      continue
    path = f'{work}/{task.type}-{task.index}.json'
    record = {}
    if os.path.exists(path):
      with open(path) as f:
        record = json.load(f)
    record['exit'] = exits[task.name]
    if exits[task.name] != 0:
      record['log'] = task.log()[-3000:]
    records[task.name] = record
  return records


def _write(name, value):
  os.makedirs(GOLDEN, exist_ok=True)
  with open(os.path.join(GOLDEN, name), 'w') as f:
    json.dump(value, f, indent=1, sort_keys=True)
    f.write('\n')


def _check(records, what):
  for name, record in records.items():
    if 'error' in record or record.get('exit', 0) != 0:
      sys.exit(f'{what} {name}: {record.get("error")} '
               f'{record.get("exit")} {record.get("log")}')


def regenerate_keras(work):
  fresh = run('keras_program.py', f'--work_dir={work}/fresh')
  resumed = run('keras_program.py', f'--work_dir={work}/resumed',
                f'--from_dir={work}/fresh', f'--cells={",".join(RESUMED)}')
  cluster = run_cluster(os.path.join(work, 'cluster'))
  for records in (fresh, resumed, cluster):
    _check(records, 'keras')
  shutil.rmtree(CHECKPOINTS, ignore_errors=True)
  for cell in RESUMED:
    copy_checkpoints(os.path.join(work, 'fresh', cell),
                     os.path.join(CHECKPOINTS, cell))
  _write('keras.json', {'fresh': fresh, 'resumed': resumed,
                        'cluster': cluster})


def regenerate_kmeans(work):
  kmeans = run('kmeans_program.py', f'--work_dir={work}/kmeans')
  _check(kmeans, 'kmeans')
  _write('kmeans.json', kmeans)


def regenerate_tpu_checks(work):
  del work
  _write('tpu_checks.json', run('tpu_checks.py'))


def regenerate_tpu_embedding(work):
  records = run('tpu_embedding_program.py', f'--work_dir={work}')
  _check({k: v for k, v in records.items() if k != 'errors'},
         'tpu_embedding')
  _write('tpu_embedding.json', records)


def regenerate_warm_start(work):
  _write('warm_start.json',
         run('warm_start_program.py', f'--work_dir={work}'))


GOLDENS = {'keras': regenerate_keras, 'kmeans': regenerate_kmeans,
           'tpu_checks': regenerate_tpu_checks,
           'tpu_embedding': regenerate_tpu_embedding,
           'warm_start': regenerate_warm_start}


def main(argv):
  """Writes the goldens named on the command line (default: all)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not hasattr(tf, 'estimator'):
    sys.exit('regenerate records the real Estimator: run it on .venv/legacy')
  for name in argv[1:] or GOLDENS:
    with tempfile.TemporaryDirectory() as work:
      GOLDENS[name](work)


if __name__ == '__main__':
  main(sys.argv)
