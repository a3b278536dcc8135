"""Parameter-server strategies on one machine, the facade against TF 2.15.

RunConfig(train_distribute=...) with tf.compat.v1 ParameterServerStrategy
and CentralStorageStrategy (v1 and v2) and no TF_CONFIG: a child process on
each lane's interpreter trains the same model_fn 3 steps under each and
prints the variables; TF 2.15 runs the real Estimator (recorded in
golden/local_strategies.json by scripts/record_cluster_reference.sh), the
modern lane the facade (graph/distributed_train.py).
"""

import json
import os
import subprocess

import numpy as np
import pytest

from tests import testutil
from tests.cluster import clusterutil
from tests.cluster import run_config_test

PYTHONS = run_config_test.PYTHONS
pytestmark = run_config_test.pytestmark
FLOAT32_ULPS = 4 * np.finfo(np.float32).eps  # A few float32 roundings.

_PROBE = '''
import json, sys, tempfile
import numpy as np
from trainer.runtime import startup
startup.select_keras()
import tensorflow as tf
from trainer.facade import install
install.install()
STRATEGIES = {
    'central_storage': tf.distribute.experimental.CentralStorageStrategy,
    'central_storage_v1':
        tf.compat.v1.distribute.experimental.CentralStorageStrategy,
    'parameter_server_v1':
        tf.compat.v1.distribute.experimental.ParameterServerStrategy}

def model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable('w', [2, 1])
  loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
  train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
      loss, tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

def input_fn():
  x = np.arange(16, dtype=np.float32).reshape(8, 2) / 10
  return tf.data.Dataset.from_tensor_slices((x, x[:, :1] * 2)).repeat().batch(4)

results = {}
for name, make in STRATEGIES.items():
  config = tf.estimator.RunConfig(train_distribute=make(), tf_random_seed=1)
  est = tf.estimator.Estimator(model_fn, tempfile.mkdtemp(), config=config)
  est.train(input_fn, steps=3)
  results[name] = {v: est.get_variable_value(v).tolist()
                   for v in est.get_variable_names()}
print(json.dumps(results))
'''


def _variables(lane):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=testutil.REPO_ROOT)
  env.pop('TF_CONFIG', None)
  result = subprocess.run([PYTHONS[lane], '-c', _PROBE],
                          cwd=testutil.REPO_ROOT, env=env,
                          capture_output=True, text=True,
                          timeout=testutil.HANG_TIMEOUT)
  assert result.returncode == 0, f'{lane}: {result.stderr[-3000:]}'
  return json.loads(result.stdout.strip().splitlines()[-1])


def test_parameter_server_strategies_train_as_estimator_does():
  reference = clusterutil.reference('local_strategies',
                                    lambda: _variables('legacy'))
  facade = _variables('modern')
  assert sorted(reference) == ['central_storage', 'central_storage_v1',
                               'parameter_server_v1']
  for name, variables in reference.items():
    assert sorted(variables) == ['global_step', 'w', 'w/Adagrad'], name
    assert variables['global_step'] == 3, name
    assert facade[name]['global_step'] == 3, name
    for key in ('w', 'w/Adagrad'):
      # To float32 rounding: the recording machine's kernels round one ulp
      # differently from some others (w/Adagrad 32.20759963989258 there,
      # 32.20759582519531 from the real Estimator and the facade alike on
      # an AVX-512 Xeon), so bit for bit holds only on one machine.
      np.testing.assert_allclose(facade[name][key], variables[key],
                                 rtol=FLOAT32_ULPS, err_msg=f'{name} {key}')
