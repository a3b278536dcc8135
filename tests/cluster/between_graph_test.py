"""Estimator's asynchronous parameter-server training on a loopback cluster.

One cluster as Kubeflow's TFJob starts it (1 chief, 2 workers, 2 ps, 1
evaluator; every role in each task's TF_CONFIG, "environment": "cloud")
runs tests/cluster/census_main.py unchanged through `python -m
trainer.legacy`: on TF 2.15 the real Estimator (the reference), on TF >=
2.16 the facade; each assertion holds for both, and each case's
observations equal the reference's (recorded in golden/, see clusterutil).
The model's variables are partitioned over the two ps tasks
(min_max_variable_partitioner); mid-training a worker and the evaluator
are killed and restarted. Then: SyncReplicasOptimizer, the master layout,
and chief/workers without ps.
"""

import os
import re

import pytest
import tensorflow as tf

from tests import testutil
from tests.cluster import clusterutil

MAX_STEPS = 900
TRAINERS = ('chief:0', 'worker:0', 'worker:1')
ASYNC_TOLERANCE = clusterutil.async_tolerance(len(TRAINERS))
VARIABLES = {  # name: shape, in every checkpoint (partitions saved whole).
    'global_step': [],
    'census/input_layer/color_embedding/embedding_weights': [4, 3],
    'census/hidden/kernel': [5, 16],
    'census/hidden/bias': [16],
    'census/logits/kernel': [16, 2],
}
VARIABLES.update({f'{name}/Adagrad': shape for name, shape in
                  VARIABLES.items() if name != 'global_step'})


def _error_lines(log):
  return [line for line in log.splitlines()
          if re.search(r'Traceback|^\w*Error|^E\d{4} .*\.py', line)]


def _since_restart(task):
  log = task.log()
  return log[log.rindex('restarted ==='):] if 'restarted ===' in log else ''


@pytest.fixture(scope='module')
def job(tmp_path_factory):
  """The finished cluster: (Cluster, {task: exit status}, ps still up,
  the checkpoint step when worker 1 and the evaluator were killed).

  One cluster serves every test of the module: mid-training, worker 1 and
  the evaluator are SIGKILLed (after the worker's first step and the
  evaluator's first evaluation) and restarted, as TFJob restarts a pod.
  Training is paced (0.5 s a step: MAX_STEPS take 150 s, room for the
  restarts on a loaded machine) until the restarted worker has trained a
  step and the restarted evaluator evaluated, then runs at full speed."""
  cluster = clusterutil.Cluster(
      tmp_path_factory.mktemp('between_graph'), ps=2, paced=True,
      flags=[f'--max_steps={MAX_STEPS}', '--step_secs=0.5',
             '--save_checkpoints_steps=100', '--partitioner=min_max'])
  cluster.start()
  try:
    worker, evaluator = cluster.task('worker', 1), cluster.task('evaluator')
    cluster.wait_for_log(worker, r'loss = .*, step = ')
    cluster.wait_for_log(evaluator, r'Saving dict for global step')
    cluster.kill(worker)
    cluster.kill(evaluator)
    killed_at = clusterutil.checkpoint_steps(cluster.model_dir)[-1]
    marks = len(worker.log()), len(evaluator.log())
    cluster.start(worker)
    cluster.start(evaluator)
    cluster.wait_for_log(worker, r'loss = .*, step = ', after=marks[0])
    cluster.wait_for_log(evaluator, r'Saving dict for global step',
                         after=marks[1])
    cluster.unpace()
    results = cluster.wait_all(clusterutil.TIMEOUT)
    ps_serving = [t.running() for t in cluster.tasks if t.type == 'ps']
  finally:
    cluster.stop()
  return cluster, results, ps_serving, killed_at


def _observations(cluster, results, ps_serving, killed_at):
  """What a user sees of the job, comparable across runs and lanes."""
  logs = cluster.logs()
  final = clusterutil.checkpoint_steps(cluster.model_dir)[-1]
  evaluated = clusterutil.eval_steps(cluster.model_dir)
  exports = clusterutil.exports(cluster.model_dir)
  signature = _parse_saved_model(exports[-1]).meta_graphs[0].signature_def[
      'serving_default'] if exports else None
  worker = cluster.task('worker', 1)
  rejoined = clusterutil.local_steps(_since_restart(worker))
  evaluator = cluster.task('evaluator')
  return {
      'exit_statuses': results,
      'ps_serving_until_stopped': ps_serving,
      'run_config': {t.name: clusterutil.anonymise(
          repr(clusterutil.run_config_line(t.log())), cluster.cluster)
                     for t in cluster.tasks},
      'waited_start_up_delay': {
          n: 'secs before starting training' in logs[n] for n in TRAINERS},
      'variable_devices': clusterutil.variable_devices(cluster.model_dir),
      'checkpoint_variables': clusterutil.variables(cluster.model_dir),
      'final_step_within_async_tolerance':
          MAX_STEPS <= final <= MAX_STEPS + ASYNC_TOLERANCE,
      'trained_after_the_kill': final > killed_at,
      'survivors_error_lines': {n: bool(_error_lines(logs[n]))
                                for n in ('chief:0', 'worker:0')},
      'restarted_worker_rejoined': bool(rejoined and rejoined[0] >= 1),
      'restarted_evaluator_evaluated': (
          'Saving dict for global step' in _since_restart(evaluator)),
      'last_evaluation_at_max_steps': bool(evaluated) and (
          evaluated[-1] >= MAX_STEPS),
      'evaluations_in_order': evaluated == sorted(evaluated),
      'exported_by': sorted(n for n, log in logs.items()
                            if 'SavedModel written' in log),
      'export_signature': signature and [sorted(signature.inputs),
                                         sorted(signature.outputs)],
  }


def test_the_job_does_what_estimator_did(job):
  """Every observation equals the reference's (TF 2.15, recorded)."""
  clusterutil.matches_reference('between_graph', _observations(*job))


def test_every_task_does_its_part_and_ps_serve_until_stopped(job):
  cluster, results, ps_serving, _ = job
  assert results == {name: 0 for name in TRAINERS + ('evaluator:0',)}, (
      cluster.describe())
  assert ps_serving == [True, True]  # A ps never returns by itself.
  for name, log in cluster.logs().items():
    assert 'Traceback' not in log, f'{name}:\n{log[-3000:]}'


def _expected_run_config(cluster, task_type, index):
  """RunConfig's derived fields for a task (Estimator's rules)."""
  spec = cluster.cluster
  if task_type == 'evaluator':
    return dict(task_type="evaluator", task_id='0', master="''",
                is_chief='False', num_ps_replicas='0',
                num_worker_replicas='0', global_id_in_cluster='None',
                evaluation_master="''")
  # Ids: the chief, the other types but ps in name order, then ps.
  order = ['chief', 'evaluator', 'worker', 'ps']
  global_id = sum(len(spec[t]) for t in order[:order.index(task_type)])
  return dict(
      task_type=task_type, task_id=str(index),
      master=f"'grpc://{spec[task_type][index]}'",
      is_chief=str(task_type == 'chief'), num_ps_replicas='2',
      num_worker_replicas='3', global_id_in_cluster=str(global_id + index),
      evaluation_master="''")


def test_run_config_derives_each_tasks_settings_from_tf_config(job):
  cluster, _, _, _ = job
  for task in cluster.tasks:
    assert clusterutil.run_config_line(task.log()) == _expected_run_config(
        cluster, task.type, task.index), task.name


def test_workers_wait_their_start_up_delay(job):
  cluster, _, _, _ = job  # min((N + 1) * 5, experimental_max_worker_delay_secs)
  logs = cluster.logs()
  for name in ('worker:0', 'worker:1'):
    assert 'Waiting 2 secs before starting training.' in logs[name], name
  assert 'before starting training' not in logs['chief:0']


def test_variables_live_on_the_ps_tasks_partitioned_across_both(job):
  cluster, _, _, _ = job
  devices = clusterutil.variable_devices(cluster.model_dir)
  assert devices['global_step'].startswith('/job:ps/task:'), devices
  for name in VARIABLES:
    if name == 'global_step' or name.endswith('/Adagrad'):
      continue
    parts = [devices[f'{name}/part_{i}'] for i in range(2)]
    assert sorted(parts) == ['/job:ps/task:0', '/job:ps/task:1'], name
    for i, device in enumerate(parts):  # Slots sit with their variable.
      assert devices[f'{name}/part_{i}/Adagrad'] == device, name
  assert all(d.startswith('/job:ps/task:') for d in devices.values()), devices


def test_checkpoints_hold_the_whole_variables(job):
  cluster, _, _, _ = job
  assert clusterutil.variables(cluster.model_dir) == VARIABLES


def test_every_trainer_trained_and_the_job_ends_near_max_steps(job):
  cluster, _, _, _ = job
  final = clusterutil.checkpoint_steps(cluster.model_dir)[-1]
  assert MAX_STEPS <= final <= MAX_STEPS + ASYNC_TOLERANCE
  for name in TRAINERS:
    local, last_seen = clusterutil.local_steps(cluster.logs()[name])
    assert local >= 1, name
    # (The others may finish the job during a trainer's last step.)
    assert last_seen <= MAX_STEPS + ASYNC_TOLERANCE, name
  # Every step of the shared global_step was one task's (worker 1's steps
  # before it was killed are not counted: it printed none).
  total = sum(clusterutil.local_steps(cluster.logs()[n])[0] for n in TRAINERS)
  assert total <= MAX_STEPS + ASYNC_TOLERANCE


def test_a_killed_worker_and_evaluator_restart_and_training_stays_whole(job):
  """The others train on without an error line; the restarted worker
  rejoins the shared global step; the restarted evaluator evaluates."""
  cluster, _, _, killed_at = job
  logs = cluster.logs()
  for name in ('chief:0', 'worker:0'):
    assert not _error_lines(logs[name]), (name, _error_lines(logs[name]))
  worker = cluster.task('worker', 1)
  rejoined = clusterutil.local_steps(_since_restart(worker))
  assert rejoined and rejoined[0] >= 1, _since_restart(worker)[-3000:]
  assert clusterutil.checkpoint_steps(cluster.model_dir)[-1] > killed_at
  assert 'Saving dict for global step' in _since_restart(
      cluster.task('evaluator'))


def test_evaluator_evaluates_checkpoints_and_exports_the_final_one(job):
  cluster, _, _, _ = job
  final = clusterutil.checkpoint_steps(cluster.model_dir)[-1]
  evaluated = clusterutil.eval_steps(cluster.model_dir)
  assert evaluated and evaluated[-1] >= MAX_STEPS, evaluated
  assert evaluated == sorted(evaluated)
  exports = clusterutil.exports(cluster.model_dir)
  assert exports, 'the evaluator exported nothing'
  reader = tf.train.load_checkpoint(
      os.path.join(exports[-1], 'variables', 'variables'))
  assert reader.get_tensor('global_step') == final
  # The chief trains only: the evaluator task exports (as in Estimator).
  assert 'SavedModel written' not in cluster.logs()['chief:0']
  assert 'SavedModel written' in cluster.logs()['evaluator:0']
  saved_model = _parse_saved_model(exports[-1])
  signature = saved_model.meta_graphs[0].signature_def['serving_default']
  assert list(signature.inputs) == ['examples']
  assert list(signature.outputs) == ['class']


def _parse_saved_model(path):
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
  proto = saved_model_pb2.SavedModel()
  with open(os.path.join(path, 'saved_model.pb'), 'rb') as f:
    proto.ParseFromString(f.read())
  return proto


def test_sync_replicas_optimizer_aggregates_every_step(tmp_path):
  """SyncReplicasOptimizer (replicas_to_aggregate = the 3 trainers) over a
  fixed_size_partitioner: exactly max_steps, every trainer contributing.
  At the end the chief, under Estimator as here, waits 120 s (TF's
  queue-runner grace period) for its token queue thread before it exits 0;
  the test stops it once its training loop has ended."""
  max_steps = 60
  cluster = clusterutil.Cluster(
      tmp_path, flags=[f'--max_steps={max_steps}', '--sync_replicas',
                       '--partitioner=fixed', '--step_secs=0.05',
                       '--save_checkpoints_steps=20'])
  cluster.start()
  try:
    results = cluster.wait_all(
        clusterutil.TIMEOUT, roles=('worker', 'evaluator'))
    chief = cluster.task('chief')
    cluster.wait_for_log(chief, r'task chief:0 trained \d+ local steps')
  finally:
    cluster.stop()
  trained = {t.name: clusterutil.local_steps(t.log()) for t in cluster.tasks
             if t.type in ('chief', 'worker')}
  clusterutil.matches_reference('sync_replicas', {
      'exit_statuses': results,
      'checkpoint_steps': clusterutil.checkpoint_steps(cluster.model_dir),
      'contributed': {n: bool(s and s[0] >= 1 and s[1] <= max_steps)
                      for n, s in trained.items()},
      'variable_devices': clusterutil.variable_devices(cluster.model_dir),
      'checkpoint_variables': clusterutil.variables(cluster.model_dir),
      'eval_steps': clusterutil.eval_steps(cluster.model_dir)[-1:],
  })
  assert results == {'worker:0': 0, 'worker:1': 0, 'evaluator:0': 0}, (
      cluster.describe())
  assert clusterutil.checkpoint_steps(cluster.model_dir)[-1] == max_steps
  for name, (local, last_seen) in trained.items():
    assert local >= 1 and last_seen <= max_steps, name
  devices = clusterutil.variable_devices(cluster.model_dir)
  assert {devices['census/hidden/kernel/part_0'],
          devices['census/hidden/kernel/part_1']} == {'/job:ps/task:0'}
  assert clusterutil.eval_steps(cluster.model_dir)[-1] == max_steps


def test_a_master_trains_evaluates_and_exports(tmp_path):
  """The older layout: a master (no evaluator task) trains with a worker
  and evaluates and exports after its own checkpoints."""
  max_steps = 120
  cluster = clusterutil.Cluster(
      tmp_path, master=True, workers=1, evaluator=0,
      flags=[f'--max_steps={max_steps}', '--step_secs=0.02',
             '--save_checkpoints_steps=40'])
  cluster.start()
  try:
    results = cluster.wait_all(clusterutil.TIMEOUT)
  finally:
    cluster.stop()
  logs = cluster.logs()
  final = clusterutil.checkpoint_steps(cluster.model_dir)[-1]
  clusterutil.matches_reference('master', {
      'exit_statuses': results,
      'run_config': {t.name: clusterutil.anonymise(
          repr(clusterutil.run_config_line(t.log())), cluster.cluster)
                     for t in cluster.tasks},
      'final_step_within_async_tolerance':
          max_steps <= final <= max_steps + clusterutil.async_tolerance(2),
      'master_evaluated': 'Saving dict for global step' in logs['master:0'],
      'last_evaluation_is_final':
          clusterutil.eval_steps(cluster.model_dir)[-1:] == [final],
      'exported_by': sorted(n for n, log in logs.items()
                            if 'SavedModel written' in log),
      'worker_trained': (clusterutil.local_steps(logs['worker:0']) or
                         (0,))[0] >= 1,
  })
  assert results == {'master:0': 0, 'worker:0': 0}, cluster.describe()
  fields = clusterutil.run_config_line(logs['master:0'])
  assert (fields['task_type'], fields['is_chief']) == ('master', 'True')
  assert max_steps <= final <= max_steps + clusterutil.async_tolerance(2)
  assert 'Saving dict for global step' in logs['master:0']
  assert clusterutil.eval_steps(cluster.model_dir)[-1] == final
  assert clusterutil.exports(cluster.model_dir)
  assert clusterutil.local_steps(logs['worker:0'])[0] >= 1


SESSION_TIMEOUT_SECS = 8  # The worker's wait (RunConfig).


def test_without_ps_the_chief_trains_alone_and_a_worker_waits(tmp_path):
  """No "ps" task and no strategy: each task's variables are its own (no
  device setter), so Estimator's chief trains and checkpoints alone, and a
  worker waits for a chief that never initialises its variables until
  session_creation_timeout_secs, then fails; the evaluator evaluates and
  exports the chief's checkpoints. (The facade trained such a cluster
  synchronously with MultiWorkerMirroredStrategy, to other results.)"""
  max_steps = 60
  cluster = clusterutil.Cluster(
      tmp_path, workers=1, ps=0, paced=True,
      # The chief trains paced (1 s a step) until the worker has passed
      # Estimator's max_steps check (it calls its model_fn), so the worker
      # starts before the chief's last checkpoint (else it has nothing to
      # train and exits 0, under Estimator as here).
      flags=[f'--max_steps={max_steps}', '--save_checkpoints_steps=20',
             '--step_secs=1',
             f'--session_creation_timeout_secs={SESSION_TIMEOUT_SECS}'])
  cluster.start()
  try:
    cluster.wait_for_log(cluster.task('worker'), r'Calling model_fn')
    cluster.unpace()
  finally:
    results = cluster.finish()
  logs = cluster.logs()
  worker = logs['worker:0']
  clusterutil.matches_reference('without_ps', {
      'exit_statuses': results,
      'chief_steps': clusterutil.local_steps(logs['chief:0']),
      'checkpoint_steps': clusterutil.checkpoint_steps(cluster.model_dir),
      'checkpoint_variables': clusterutil.variables(cluster.model_dir),
      'variable_devices': clusterutil.variable_devices(cluster.model_dir),
      'worker_steps': clusterutil.local_steps(worker),
      'worker_error': re.findall(r'DeadlineExceededError: .*', worker)[-1:],
      'eval_steps': clusterutil.eval_steps(cluster.model_dir)[-1:],
      'exported_by': sorted(n for n, log in logs.items()
                            if 'SavedModel written' in log),
  })
  assert results == {'chief:0': 0, 'worker:0': 1, 'evaluator:0': 0}, (
      cluster.describe())
  assert clusterutil.local_steps(logs['chief:0']) == (max_steps,
                                                      max_steps - 1)
  assert clusterutil.checkpoint_steps(cluster.model_dir) == [0, 20, 40, 60]
  assert clusterutil.variables(cluster.model_dir) == VARIABLES
  devices = clusterutil.variable_devices(cluster.model_dir)
  assert devices and not any(devices.values()), devices  # No device setter.
  assert clusterutil.local_steps(worker) is None, worker[-3000:]
  assert ('DeadlineExceededError: Session was not ready after waiting '
          f'{SESSION_TIMEOUT_SECS} secs.') in worker, worker[-3000:]
  if not testutil.HAS_ESTIMATOR:  # The facade says why first.
    assert 'the cluster has no "ps" task' in worker
  assert clusterutil.eval_steps(cluster.model_dir)[-1] == max_steps
  assert clusterutil.exports(cluster.model_dir)
