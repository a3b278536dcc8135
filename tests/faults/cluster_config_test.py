"""A TF_CONFIG job set up wrong (issue 39): TF_CONFIG that is not JSON, a
task its cluster does not have, a cluster without its chief, a task whose
port another process holds. Through the launcher (Estimator's RunConfig
refuses the first three; the task's server cannot start for the last) and
trainer.main (which checks TF_CONFIG before importing TensorFlow): exit 1
and the first line a user reads names TF_CONFIG's fault, the task and its
address, and the fix (before: a traceback ending in the JSON parser's
error, RunConfig's ValueError, or `UnknownError: Could not start gRPC
server` without an address).
"""

import json
import socket

import pytest

from tests import testutil
from tests.faults import cases
from tests.faults import faultutil

_MAIN_TINY = ['--train_steps=4', '--iterations_per_loop=2',
              '--steps_per_eval=4', '--eval_steps=1',
              f'--train_batch_size={faultutil.BATCH}',
              f'--eval_batch_size={faultutil.BATCH}']


@pytest.fixture(scope='module')
def canned_data(tmp_path_factory):
  return faultutil.make_canned_data(str(tmp_path_factory.mktemp('canned')))


def _command(path_name, model_dir, canned_data, *extra):
  if path_name == 'launcher':
    data_file, vocabulary = canned_data
    return faultutil.canned_command(
        [f'--model_dir={model_dir}', f'--data_file={data_file}',
         f'--vocabulary_file={vocabulary}', '--max_steps=4'] + list(extra))
  return faultutil.main_command([f'--model_dir={model_dir}'] + _MAIN_TINY +
                                list(extra))


def _run(path_name, tf_config, model_dir, canned_data, *extra):
  """The path's run under TF_CONFIG; with Python's import log for
  trainer.main (to see whether TensorFlow was imported)."""
  env = {'TF_CONFIG': tf_config}
  if path_name == 'main':
    env['PYTHONPROFILEIMPORTTIME'] = '1'
  return faultutil.run(_command(path_name, model_dir, canned_data, *extra),
                       env=env)


def _checked(result, seconds, key, path_name, case, **values):
  assert result.returncode == cases.exit_status(key), result.stderr[-3000:]
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(path_name, key, **values))
  assert 'Traceback' not in result.stderr
  faultutil.Record(path_name).add(case, result.returncode, seconds, line,
                                  True)
  return line


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_tf_config_that_is_not_json(path_name, canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  result, seconds = _run(path_name, '{cluster: chief}', model_dir,
                         canned_data)
  line = _checked(result, seconds, 'tf-config-json', path_name,
                  'TF_CONFIG not JSON')
  assert "'{cluster: chief}'" in line and 'character 1' in line
  assert not model_dir.exists()
  if path_name == 'main':
    assert not faultutil.imported_tensorflow(result.stderr)


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_task_index_beyond_its_job(path_name, canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  tf_config = json.dumps({
      'cluster': {'chief': ['localhost:2222'], 'worker': ['localhost:2223']},
      'task': {'type': 'worker', 'index': 3}})
  result, seconds = _run(path_name, tf_config, model_dir, canned_data)
  _checked(result, seconds, 'tf-config-task', path_name,
           'a task index beyond its job', TASK='worker:3', JOB='worker', N=1,
           LAST=0)
  assert not model_dir.exists()
  if path_name == 'main':
    assert not faultutil.imported_tensorflow(result.stderr)


def test_a_cluster_without_its_chief(canned_data, tmp_path):
  model_dir = tmp_path / 'model'
  tf_config = json.dumps({
      'cluster': {'worker': ['localhost:2223', 'localhost:2224'],
                  'ps': ['localhost:2225']},
      'task': {'type': 'worker', 'index': 0}})
  result, seconds = _run('launcher', tf_config, model_dir, canned_data)
  _checked(result, seconds, 'tf-config-chief', 'launcher',
           'a cluster without a chief', JOBS='worker x2, ps x1')
  assert not model_dir.exists()


@pytest.mark.parametrize('path_name,role', [
    ('launcher', 'chief'), ('launcher', 'ps'), ('main', 'worker')])
def test_a_port_taken_by_another_process(path_name, role, canned_data,
                                         tmp_path):
  model_dir = tmp_path / 'model'
  with socket.socket() as holder:  # Another process's, as far as TF sees.
    holder.bind(('localhost', 0))
    holder.listen()
    taken = f'localhost:{holder.getsockname()[1]}'
    with testutil.closed_port() as free:
      other = f'localhost:{free}'
      if path_name == 'launcher':  # A ps cluster: between-graph training.
        cluster = {'chief': [other], 'ps': [other]}
        cluster[role] = [taken]
        extra = ()
      else:  # Two workers: MultiWorkerMirroredStrategy.
        cluster = {'worker': [taken, other]}
        extra = ('--runner=tf2',)
      tf_config = json.dumps({'cluster': cluster,
                              'task': {'type': role, 'index': 0}})
      result, seconds = _run(path_name, tf_config, model_dir, canned_data,
                             *extra)
  _checked(result, seconds, 'port-in-use', path_name,
           f'a port in use by another process ({role})', TASK=f'{role}:0',
           ADDRESS=taken)
  assert not list(model_dir.glob('*.index'))
