"""Two worker processes on 127.0.0.1 under MultiWorkerMirroredStrategy."""

import json
import os
import subprocess
import sys
import time

import numpy as np

from tests import testutil

# An input_fn that records which training files its pipeline reads, then
# reads them through the built-in TFRecord input_fn.
SHARD_INPUT = '''
import json, os
from input_fn import sharding, tfrecord

def input_fn(params):
  if params['mode'] == 'train':
    num, index = sharding.input_shard(params)
    files = tfrecord.list_files(params, True)[index::num]
    path = os.path.join(os.environ['SHARD_LOG_DIR'], f'shard-{index}-of-{num}.json')
    with open(path, 'w') as f:
      json.dump([os.path.basename(p) for p in files], f)
  return tfrecord.input_fn(params)
'''


# A port taken between choosing it and a worker's server binding it fails
# that run; the run is tried again on other ports.
_PORT_TAKEN = ('Address already in use', 'Failed to add port')
ATTEMPTS = 3


def _run_workers(tmp_path, model_dir):
  """Runs the two workers to the end; [(returncode, stdout, stderr)]."""
  cluster = {'worker': [f'127.0.0.1:{p}' for p in testutil.free_ports(2)]}
  workers = []
  for index in range(2):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', SHARD_LOG_DIR=str(tmp_path),
               PYTHONPATH=str(tmp_path), TF_CONFIG=json.dumps(
                   {'cluster': cluster,
                    'task': {'type': 'worker', 'index': index}}))
    workers.append(subprocess.Popen(
        [sys.executable, '-m', 'trainer.main', '--runner=tf2', '--mode=train',
         '--train_steps=10', '--iterations_per_loop=5', '--num_cores=1',
         '--train_batch_size=32', '--augmentation=none',
         '--input=shard_input:input_fn', f'--model_dir={model_dir}'],
        cwd=testutil.REPO_ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True))
  try:
    # A worker whose peer failed waits for it: stop the other on a failure.
    results = [None, None]
    deadline = time.monotonic() + testutil.HANG_TIMEOUT  # Hangs only.
    while None in results:
      assert time.monotonic() < deadline, 'the workers hang'
      for i, worker in enumerate(workers):
        if results[i] is None:
          try:
            out, err = worker.communicate(timeout=1)
          except subprocess.TimeoutExpired:
            continue
          results[i] = (worker.returncode, out, err)
          if worker.returncode != 0:
            workers[1 - i].kill()
  finally:
    for worker in workers:
      if worker.poll() is None:
        worker.kill()
  return results


def test_two_workers_read_own_shards_and_end_identical(tmp_path):
  (tmp_path / 'shard_input.py').write_text(SHARD_INPUT)
  for attempt in range(ATTEMPTS):
    model_dir = tmp_path / f'model{attempt}'
    results = _run_workers(tmp_path, model_dir)
    taken = any(code != 0 and any(m in err for m in _PORT_TAKEN)
                for code, _, err in results)
    if not taken:
      break
    print(f'attempt {attempt}: a port was taken before a worker bound it')
  for code, out, err in results:
    assert code == 0, err[-3000:]
    assert 'global_step: 10' in out
    assert 'multi_worker_mirrored strategy, 2 replica(s)' in err

  shards = [json.loads((tmp_path / f'shard-{i}-of-2.json').read_text())
            for i in range(2)]
  assert shards[0] and shards[1]
  assert not set(shards[0]) & set(shards[1])
  assert sorted(shards[0] + shards[1]) == [
      f'train-0000{i}-of-00004' for i in range(4)]

  chief = testutil.checkpoint_values(model_dir)
  other = testutil.checkpoint_values(model_dir / 'worker-1')
  assert chief['global_step'] == other['global_step'] == 10
  assert chief.keys() == other.keys()
  for name in chief:
    np.testing.assert_array_equal(chief[name], other[name], err_msg=name)
