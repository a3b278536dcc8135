"""The tf2 runner's TF2 way to train with parameter servers: `python -m
trainer.main --runner=tf2` on every task of a loopback TF_CONFIG cluster (1
chief, 2 workers, 1 ps, 1 evaluator, TFJob's TF_CONFIG), starting from
a checkpoint the facade's graph engine wrote: the chief
coordinates tf.distribute.experimental.ParameterServerStrategy with a
ClusterCoordinator, the workers run the steps on their own input pipelines,
the variables live on the ps, the evaluator evaluates each checkpoint
(sidecar). The built-in model's final checkpoint then evaluates on the
facade's graph engine (TPUEstimator, use_tpu=False, in a Session) to the
metrics the tf2 runner reports. No reference run: Estimator had no TF2
ParameterServerStrategy path.
"""

import importlib.util
import os
import re
import sys

import numpy as np
import pytest
import tensorflow as tf

from scripts import local_cluster
from tests import testutil
from tests.cluster import clusterutil
from trainer.models import registry
from trainer.runners import registry as runners

pytestmark = pytest.mark.skipif(
    testutil.HAS_ESTIMATOR, reason='the tf2 runner\'s ParameterServerStrategy '
    'path is compared with the graph engine of the facade (TF >= 2.16); '
    'TF 2.15 has no facade')

GRAPH_STEPS = 10  # Trained first on the graph engine.
TRAIN_STEPS = 40
EVAL_STEPS = 4
MARK = 'input batch read by this task'
# The built-in input_fn, marking each training batch where it is read (a
# tf.print runs where the dataset runs: on a worker, under the coordinator).
WORKER_INPUT = f'''
import sys
import tensorflow as tf
from input_fn import tfrecord

def input_fn(params):
  dataset = tfrecord.input_fn(params)
  if params['mode'] != 'train':
    return dataset

  def mark(features, labels):
    with tf.control_dependencies([tf.print({MARK!r},
                                           output_stream=sys.stderr)]):
      return tf.nest.map_structure(tf.identity, (features, labels))

  return dataset.map(mark)
'''
# testutil.TINY's model and data, as the graph engine's evaluation uses.
FLAGS = ['--runner=tf2', f'--data_dir={testutil.DIGITS_RAW}',
         '--train_batch_size=32', '--eval_batch_size=40',
         '--iterations_per_loop=10', '--save_checkpoints_steps=20',
         '--mlp_hidden_units=16', '--learning_rate=0.01',
         '--lr_schedule=constant', '--shuffle_buffer=100',
         '--augmentation=none', f'--eval_steps={EVAL_STEPS}',
         '--input=worker_input:input_fn', '--eval_input=tfrecord']


@pytest.fixture(scope='module')
def job(tmp_path_factory):
  tmp_path = tmp_path_factory.mktemp('tf2_ps')
  (tmp_path / 'worker_input.py').write_text(WORKER_INPUT)
  model_dir = str(tmp_path / 'model')
  # The cluster resumes from the graph engine's checkpoint (TF1 names).
  _graph_engine_runner(model_dir).train(GRAPH_STEPS)
  cluster, results, serving = _run_cluster(
      tmp_path, local_cluster.cluster_spec(1, 2, 1, 1), *FLAGS,
      '--mode=train', f'--train_steps={TRAIN_STEPS}',
      f'--model_dir={model_dir}')
  return cluster, model_dir, results, serving


def _run_cluster(tmp_path, spec, *flags):
  """Runs `trainer.main FLAGS` on every task of `spec` (tmp_path on the
  PYTHONPATH) until the chief and evaluator exit; (cluster, their exit
  statuses, {worker/ps task: still serving then}). Each task runs on one
  CPU, as in a one-CPU pod: TensorFlow sizes its thread pools for one CPU,
  where one inter-op thread would deadlock the cluster but for the
  runner's floor (tf_config.ps_cluster_inter_op_threads)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=os.pathsep.join([testutil.REPO_ROOT, str(tmp_path)]))
  cluster = local_cluster.LocalCluster(
      [sys.executable, '-m', 'trainer.main', *flags], tmp_path / 'logs',
      spec, env=env, cwd=testutil.REPO_ROOT, one_cpu_per_task=True)
  cluster.start()
  try:
    results = cluster.wait_all(clusterutil.TIMEOUT,
                               roles=('chief', 'evaluator'))
    serving = {t.name: t.running() for t in cluster.tasks
               if t.type in ('worker', 'ps')}
  finally:
    cluster.stop()
  return cluster, results, serving


def _logs(cluster):
  return {t.name: t.log() for t in cluster.tasks}


def test_the_chief_coordinates_the_workers_train_the_ps_hold_variables(job):
  cluster, model_dir, results, serving = job
  logs = _logs(cluster)
  assert results == {'chief:0': 0, 'evaluator:0': 0}, '\n'.join(
      f'--- {n}\n{log[-2500:]}' for n, log in logs.items())
  # Workers and ps serve until stopped (TFJob deletes them after the chief).
  assert serving == {'worker:0': True, 'worker:1': True, 'ps:0': True}
  assert 'parameter_server strategy' in logs['chief:0']
  placed = re.search(r'ParameterServerStrategy: (\d+) variables on (.*); '
                     'steps on the workers', logs['chief:0'])
  assert placed and int(placed.group(1)) > 0, logs['chief:0'][-3000:]
  assert placed.group(2) == '/job:ps/replica:0/task:0/device:CPU:0'
  for name in ('worker:0', 'worker:1'):  # Each read its own input.
    assert MARK in logs[name], f'{name}:\n{logs[name][-3000:]}'
  assert MARK not in logs['chief:0']
  reader = tf.train.load_checkpoint(model_dir)
  assert reader.get_tensor('global_step') == TRAIN_STEPS  # Exactly.
  steps = clusterutil.checkpoint_steps(model_dir)
  assert GRAPH_STEPS in steps and steps[-1] == TRAIN_STEPS, steps
  # It went on from the graph engine's checkpoint (from scratch, its first
  # progress line would be at step 10 = GRAPH_STEPS).
  progress = [int(p) for p in
              re.findall(r'train \| step: (\d+)', logs['chief:0'])]
  assert progress and GRAPH_STEPS < progress[0] <= TRAIN_STEPS, progress


def _reported_metrics(log):
  """The metrics trainer.main printed last ('key: value' lines)."""
  return {k: float(v) for k, v in
          re.findall(r'^(\w+): (-?[\d.e+-]+)$', log, re.M)}


def _graph_engine_runner(model_dir):
  """The built-in model (testutil.TINY) on the facade's TPUEstimator
  (use_tpu=False: the graph engine, a Session), in this process."""
  params = testutil.base_config(model_dir=model_dir, runner='estimator',
                                eval_steps=EVAL_STEPS)
  return runners.make_runner(params, registry.resolve_model_fn(
      params.model), registry.resolve_input_fn('tfrecord'))


def test_the_evaluator_reports_what_the_graph_engine_computes(job):
  cluster, model_dir, _, _ = job
  reported = _reported_metrics(cluster.task('evaluator').log())
  assert reported.get('global_step') == TRAIN_STEPS, reported
  assert clusterutil.eval_steps(model_dir)[-1] == TRAIN_STEPS
  graph = _graph_engine_runner(model_dir).evaluate(EVAL_STEPS)
  assert graph['global_step'] == TRAIN_STEPS
  assert set(reported) == set(graph), (reported, graph)
  for name, value in graph.items():
    np.testing.assert_allclose(reported[name], value, rtol=1e-5,
                               err_msg=name)


def _import_module(path):
  spec = importlib.util.spec_from_file_location('linear_model', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_a_foreign_model_fn_trains_on_the_ps_and_evaluates_as_in_a_session(
    tmp_path):
  """A team's own TPUEstimator model_fn and input_fn (testutil's
  LEGACY_USER_MODULE: get_variable, eval_metrics, a v1 optimizer), from
  outside the repository, on 1 chief, 1 worker, 1 ps and 1 evaluator: the
  worker trains it with its variables on the ps, and its final checkpoint
  evaluates on the facade's graph engine to the evaluator's metrics."""
  path = tmp_path / 'linear_model.py'
  testutil.write_legacy_user_module(path)
  model_dir = str(tmp_path / 'model')
  steps, batch = 20, 16
  cluster, results, _ = _run_cluster(
      tmp_path, local_cluster.cluster_spec(1, 1, 1, 1), '--runner=tf2',
      '--model=linear_model:model_fn', '--input=linear_model:input_fn',
      '--mode=train', f'--train_steps={steps}', '--iterations_per_loop=5',
      '--save_checkpoints_steps=10', '--eval_steps=1',
      f'--train_batch_size={batch}', f'--eval_batch_size={batch}',
      f'--model_dir={model_dir}')
  logs = _logs(cluster)
  assert results == {'chief:0': 0, 'evaluator:0': 0}, '\n'.join(
      f'--- {n}\n{log[-2500:]}' for n, log in logs.items())
  placed = re.search(r'ParameterServerStrategy: (\d+) variables on (.*); '
                     'steps on the workers', logs['chief:0'])
  assert placed and int(placed.group(1)) >= 2, logs['chief:0'][-3000:]
  assert tf.train.load_checkpoint(model_dir).get_tensor(
      'global_step') == steps
  reported = _reported_metrics(cluster.task('evaluator').log())
  assert reported.get('global_step') == steps, reported
  user = _import_module(path)
  params = testutil.base_config(model_dir=model_dir, runner='estimator',
                                eval_steps=1, eval_batch_size=batch)
  graph = runners.make_runner(params, user.model_fn, user.input_fn).evaluate(1)
  assert set(reported) == set(graph) >= {'accuracy', 'loss', 'global_step'}
  for name, value in graph.items():
    np.testing.assert_allclose(reported[name], value, rtol=1e-5,
                               err_msg=name)
