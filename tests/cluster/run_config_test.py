"""RunConfig's TF_CONFIG-derived fields, the facade's against TF 2.15's.

For TF_CONFIGs of every layout Estimator knew (TFJob's with an evaluator in
every pod's cluster, a master, one node, session_master, a strategy that
makes the coordinator take over, and invalid ones), a child process on each
lane's interpreter builds tf.estimator.RunConfig() and prints its fields (or
its error); TF 2.15 runs the real Estimator (recorded in
golden/run_config_fields.json by scripts/record_cluster_reference.sh), the
modern lane the facade.
"""

import json
import os
import subprocess

import pytest

from tests import testutil
from tests.cluster import clusterutil

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))))
PYTHONS = {lane: os.path.join(SOURCE_ROOT, '.venv', lane, 'bin', 'python')
           for lane in ('legacy', 'modern')}

pytestmark = [
    pytest.mark.skipif(
        testutil.HAS_ESTIMATOR and not clusterutil.RECORDING,
        reason='compares the facade with TF 2.15 (recorded); it runs on the '
        'lane without Estimator, and on TF 2.15 only to record'),
    pytest.mark.skipif(
        not os.path.exists(PYTHONS['modern']) or (
            clusterutil.RECORDING and not os.path.exists(PYTHONS['legacy'])),
        reason='needs .venv/modern, and .venv/legacy to record '
        '(scripts/setup_env.sh)'),
]

_TFJOB = {'chief': ['c:1'], 'worker': ['w:1', 'w:2'], 'ps': ['p:1', 'p:2'],
          'evaluator': ['e:1']}
_MASTER = {'master': ['m:1'], 'worker': ['w:1'], 'ps': ['p:1']}


def _cases():
  """(name, TF_CONFIG, strategy) triples."""
  cases = []
  for kind, count in (('chief', 1), ('worker', 2), ('ps', 2),
                      ('evaluator', 1)):
    for index in range(count):
      config = {'cluster': _TFJOB, 'task': {'type': kind, 'index': index},
                'environment': 'cloud'}
      cases.append((f'tfjob-{kind}{index}', config, None))
      cases.append((f'tfjob-{kind}{index}-ps-strategy', config, 'ps'))
  for kind in ('master', 'worker', 'ps'):
    cases.append((f'master-{kind}',
                  {'cluster': _MASTER, 'task': {'type': kind, 'index': 0}},
                  None))
  cases += [
      ('one-node', {'cluster': {'chief': ['c:1']},
                    'task': {'type': 'chief', 'index': 0}}, None),
      ('session-master', {'cluster': _TFJOB, 'session_master': 'grpc://x:9',
                          'eval_session_master': 'grpc://y:9',
                          'task': {'type': 'evaluator', 'index': 0}}, None),
      ('no-cluster', {'task': {'type': 'worker', 'index': 0}}, None),
      ('no-chief', {'cluster': {'worker': ['w:1'], 'ps': ['p:1']},
                    'task': {'type': 'worker', 'index': 0}}, None),
      ('bad-index', {'cluster': _TFJOB, 'task': {'type': 'worker',
                                                 'index': 2}}, None),
      ('master-and-evaluator', {'cluster': dict(_MASTER, evaluator=['e:1']),
                                'task': {'type': 'evaluator', 'index': 0}},
       None),
  ]
  return cases


_PROBE = '''
import json, os, sys
from trainer.runtime import startup
startup.select_keras()
import tensorflow as tf
from trainer.facade import install
install.install()
results = {}
for name, tf_config, strategy in json.loads(sys.argv[1]):
  os.environ['TF_CONFIG'] = json.dumps(tf_config)
  try:
    kwargs = {}
    if strategy == 'ps':
      kwargs['train_distribute'] = (
          tf.compat.v1.distribute.experimental.ParameterServerStrategy())
    config = tf.estimator.RunConfig(**kwargs)
    session = config.session_config
    results[name] = {
        'cluster_spec': config.cluster_spec.as_dict(),
        'task_type': config.task_type, 'task_id': config.task_id,
        'master': config.master, 'evaluation_master': config.evaluation_master,
        'is_chief': config.is_chief, 'num_ps_replicas': config.num_ps_replicas,
        'num_worker_replicas': config.num_worker_replicas,
        'global_id_in_cluster': config.global_id_in_cluster,
        'device_filters': None if session is None else list(
            session.device_filters),
        'allow_soft_placement': None if session is None else (
            session.allow_soft_placement)}
  except Exception as e:  # The error a program would see.
    results[name] = {'error': type(e).__name__, 'message': str(e)}
print(json.dumps(results, sort_keys=True))
'''


def _fields(lane):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=testutil.REPO_ROOT)
  env.pop('TF_CONFIG', None)
  result = subprocess.run(
      [PYTHONS[lane], '-c', _PROBE, json.dumps(_cases())],
      cwd=testutil.REPO_ROOT, env=env, capture_output=True, text=True,
      timeout=testutil.HANG_TIMEOUT)
  assert result.returncode == 0, f'{lane}: {result.stderr[-3000:]}'
  return json.loads(result.stdout.strip().splitlines()[-1])


def test_run_config_fields_match_estimators_for_every_layout():
  reference = clusterutil.reference('run_config_fields',
                                    lambda: _fields('legacy'))
  facade = _fields('modern')
  assert set(reference) == {name for name, _, _ in _cases()}
  assert 'error' in reference['no-chief']  # The cases reach both branches.
  assert reference['tfjob-worker1']['master'] == 'grpc://w:2'
  for name in reference:
    assert facade[name] == reference[name], name
