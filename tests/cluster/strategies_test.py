"""RunConfig(train_distribute=...) on a loopback TF_CONFIG cluster, as
Estimator runs it through TF's Distribute Coordinator.

tests/cluster/census_main.py unchanged through `python -m trainer.legacy`
(TF 2.15: the real Estimator; later: the facade), each test's assertions
holding on both lanes:
  * tf.compat.v1.distribute.experimental.ParameterServerStrategy (1 chief,
    2 workers, 1 ps, 1 evaluator): asynchronous, variables on the ps, the
    program's RunConfig local-looking as Estimator reports it, each task's
    model_fn seeing its own settings;
  * MultiWorkerMirroredStrategy made in graph mode (1 chief, 2 workers, 1
    evaluator): synchronous all-reduce, the same loss on every worker at
    every step, exactly max_steps, non-chief checkpoints apart, the
    losses of TF 2.15's.
Each case's observations equal the reference's (recorded in golden/, see
clusterutil).
"""

import os
import re

import numpy as np
import pytest
import tensorflow as tf

from tests.cluster import clusterutil

TRAINERS = ('chief:0', 'worker:0', 'worker:1')


def _run(cluster, chief_first=False):
  if chief_first:
    cluster.start_chief_first()
  else:
    cluster.start()
  try:
    return cluster.wait_all(clusterutil.TIMEOUT)
  finally:
    cluster.stop()


@pytest.fixture(scope='module')
def ps_job(tmp_path_factory):
  cluster = clusterutil.Cluster(
      tmp_path_factory.mktemp('ps_strategy'),
      flags=['--strategy=ps', '--max_steps=400', '--step_secs=0.1',
             '--save_checkpoints_steps=40'])
  return cluster, _run(cluster, chief_first=True)


def test_parameter_server_strategy_trains_asynchronously_on_the_ps(ps_job):
  cluster, results = ps_job
  logs = cluster.logs()
  final = clusterutil.checkpoint_steps(cluster.model_dir)[-1]
  clusterutil.matches_reference('ps_strategy', {
      'exit_statuses': results,
      'coordinated': {n: 'Running `train_and_evaluate` with Distribute '
                         'Coordinator' in log for n, log in logs.items()},
      'run_config': {t.name: clusterutil.anonymise(
          repr(clusterutil.run_config_line(t.log())), cluster.cluster)
                     for t in cluster.tasks},
      'variable_devices': clusterutil.variable_devices(cluster.model_dir),
      'checkpoint_variables': clusterutil.variables(cluster.model_dir),
      'final_step_within_async_tolerance':
          400 <= final <= 400 + clusterutil.async_tolerance(len(TRAINERS)),
      'trained': {n: (clusterutil.local_steps(logs[n]) or (0,))[0] >= 1
                  for n in TRAINERS},
      'last_evaluation_at_max_steps':
          clusterutil.eval_steps(cluster.model_dir)[-1] >= 400,
      'exported': bool(clusterutil.exports(cluster.model_dir)),
  })
  assert results == {n: 0 for n in TRAINERS + ('evaluator:0',)}, (
      cluster.describe())
  assert 'Running `train_and_evaluate` with Distribute Coordinator' in (
      logs['chief:0'])
  # The program's RunConfig looks local under the coordinator, on every task.
  for task in cluster.tasks:
    fields = clusterutil.run_config_line(task.log())
    assert (fields['task_type'], fields['is_chief'], fields['master'],
            fields['num_ps_replicas']) == ('worker', 'True', "''", '0'), (
                task.name)
  devices = clusterutil.variable_devices(cluster.model_dir)
  assert devices and all(d.startswith('/job:ps/') for d in devices.values())
  assert 400 <= final <= 400 + clusterutil.async_tolerance(len(TRAINERS))
  for name in TRAINERS:  # The model_fn's config is the task's own.
    local, _ = clusterutil.local_steps(logs[name])
    assert local >= 1, name
    assert re.search(rf'task {name} trained', logs[name]), name
  assert set(clusterutil.variables(cluster.model_dir)) >= {
      'global_step', 'census/hidden/kernel', 'census/hidden/kernel/Adagrad'}
  assert clusterutil.eval_steps(cluster.model_dir)[-1] >= 400
  assert clusterutil.exports(cluster.model_dir)


@pytest.fixture(scope='module')
def mwms_job(tmp_path_factory):
  cluster = clusterutil.Cluster(
      tmp_path_factory.mktemp('mwms'), ps=0,
      flags=['--strategy=mwms', '--graph_mode', '--max_steps=120',
             '--save_checkpoints_steps=40'])
  return cluster, _run(cluster)


def _losses(log):
  """[(loss, step)] of the LoggingTensorHook lines (TF's own logger)."""
  return re.findall(r'^INFO:tensorflow:loss = ([\d.e-]+), step = (\d+)', log,
                    re.M)


def test_multi_worker_mirrored_strategy_trains_synchronously(mwms_job):
  cluster, results = mwms_job
  logs = cluster.logs()
  clusterutil.matches_reference('mwms', {
      'exit_statuses': results,
      'checkpoint_steps': clusterutil.checkpoint_steps(cluster.model_dir),
      'worker_checkpoint_steps': {
          n: clusterutil.checkpoint_steps(os.path.join(
              cluster.model_dir, f'tmp_worker_{n[-1]}'))
          for n in ('worker:0', 'worker:1')},
      'local_steps': {n: clusterutil.local_steps(logs[n]) for n in TRAINERS},
      'logged_steps': {n: [step for _, step in _losses(logs[n])]
                       for n in TRAINERS},
      'checkpoint_variables': clusterutil.variables(cluster.model_dir),
      'last_eval_step': clusterutil.eval_steps(cluster.model_dir)[-1:],
  })
  losses = [float(loss) for loss, _ in _losses(logs['chief:0'])]
  np.testing.assert_allclose(  # TF 2.15's losses, step by step.
      losses, clusterutil.reference('mwms_losses', lambda: losses),
      rtol=1e-5)
  assert results == {n: 0 for n in TRAINERS + ('evaluator:0',)}, (
      cluster.describe())
  assert clusterutil.checkpoint_steps(cluster.model_dir)[-1] == 120
  chief_losses = _losses(logs['chief:0'])
  assert len(chief_losses) == 12  # Every log_step_count_steps=10 steps.
  for name in ('worker:0', 'worker:1'):
    assert _losses(logs[name]) == chief_losses, name  # One model.
    assert clusterutil.local_steps(logs[name]) == (120, 119), name
    # A non-chief worker's session checkpoints apart, as TF's decides.
    index = name[-1]
    assert clusterutil.checkpoint_steps(
        os.path.join(cluster.model_dir, f'tmp_worker_{index}'))[-1] == 120
  assert clusterutil.eval_steps(cluster.model_dir)[-1] == 120
  reader = tf.train.load_checkpoint(os.path.join(
      clusterutil.exports(cluster.model_dir)[-1], 'variables', 'variables'))
  assert reader.get_tensor('global_step') == 120
