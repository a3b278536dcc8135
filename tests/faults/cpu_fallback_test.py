"""--cpu_fallback runs a program's own --use_tpu=True code as on a one-core
TPU: CrossShardOptimizer and cross_replica_sum (as tensorflow/tpu's mnist
uses them) train exactly as with --use_tpu=False; the TPU-only calls that
have no one-core meaning fail while the graph is built, before any step,
in one line naming the call and the flag."""

import os

import pytest
import tensorflow as tf
from tensorflow.python.tpu.ops import tpu_ops  # pylint: disable=g-direct-tensorflow-import

from tests.faults import cases
from tests.faults import faultutil
from trainer.compat import one_replica_tpu_ops

_ARGS = ['--mode=loop', '--train_steps=60', '--steps_per_eval=30']


@pytest.fixture()
def patched(monkeypatch):
  """install()'s patches, undone after the test."""
  for name in ('cross_replica_sum', 'all_to_all', 'collective_permute'):
    monkeypatch.setattr(tpu_ops, name, getattr(tpu_ops, name))
  for name in ('cross_replica_sum', 'rewrite', 'shard', 'replicate',
               'batch_parallel', 'initialize_system', 'shutdown_system'):
    monkeypatch.setattr(tf.compat.v1.tpu, name,
                        getattr(tf.compat.v1.tpu, name))
  one_replica_tpu_ops.install()
  assert one_replica_tpu_ops.install() is tpu_ops.cross_replica_sum  # Once.


def test_one_core_collectives_are_the_identity(patched):
  del patched
  with tf.Graph().as_default():
    x = tf.constant([[1., 2.], [3., 4.]])
    outputs = [tf.compat.v1.tpu.cross_replica_sum(x),
               tpu_ops.all_to_all(x, 0, 0, 1),
               tpu_ops.collective_permute(x, [[0, 0]])]
    with tf.compat.v1.Session() as sess:
      for value in sess.run(outputs):
        assert value.tolist() == [[1., 2.], [3., 4.]]


@pytest.mark.parametrize('call,named', [
    (lambda x: tf.compat.v1.tpu.rewrite(lambda: x), 'tf.compat.v1.tpu.rewrite'),
    (lambda x: tf.compat.v1.tpu.shard(lambda: x), 'tf.compat.v1.tpu.shard'),
    (lambda x: tf.compat.v1.tpu.initialize_system(),
     'tf.compat.v1.tpu.initialize_system'),
    (lambda x: tpu_ops.all_to_all(x, 0, 0, 2), 'all_to_all(split_count=2)'),
    (lambda x: tpu_ops.collective_permute(x, [[0, 1], [1, 0]]),
     'collective_permute(source_target_pairs=[(0, 1), (1, 0)])'),
])
def test_calls_without_a_one_core_meaning_are_refused(patched, call, named):
  del patched
  with tf.Graph().as_default():
    with pytest.raises(NotImplementedError) as raised:
      call(tf.constant(1.))
  line = one_replica_tpu_ops.unsupported_call(raised.value)
  assert line.startswith(f'the program calls {named}, which '), line
  assert '--use_tpu=False' in line and '\n' not in line
  assert one_replica_tpu_ops.unsupported_call(NotImplementedError('x')) is None


def test_cross_shard_optimizer_runs_as_one_replica(fault_data, tmp_path):
  record = faultutil.Record('launcher')
  plain, _ = faultutil.run(faultutil.launcher_command(
      [f'--model_dir={tmp_path}/plain', f'--data_dir={fault_data}'] + _ARGS))
  assert plain.returncode == 0, plain.stderr[-3000:]
  result, seconds = faultutil.run(faultutil.launcher_command(
      [f'--model_dir={tmp_path}/tpu', f'--data_dir={fault_data}',
       '--use_tpu=True'] + _ARGS, launcher_args=['--cpu_fallback']))
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'CrossReplicaSum' not in result.stderr
  final = [l for l in result.stdout.splitlines() if l.startswith('final ')]
  expected = [l for l in plain.stdout.splitlines() if l.startswith('final ')]
  assert final == expected and final, (final, expected)
  assert faultutil.latest_step(f'{tmp_path}/tpu') == 60
  record.add('--cpu_fallback, the program\'s --use_tpu=True with '
             'CrossShardOptimizer and cross_replica_sum', result.returncode,
             seconds, 'trains as with --use_tpu=False: ' + final[0], True)


def test_a_tpu_only_call_fails_before_training(fault_data, tmp_path):
  model_dir = tmp_path / 'model'
  result, seconds = faultutil.run(faultutil.launcher_command(
      [f'--model_dir={model_dir}', f'--data_dir={fault_data}',
       '--use_tpu=True', '--tpu_only_call=rewrite'] + _ARGS,
      launcher_args=['--cpu_fallback']))
  assert result.returncode == cases.exit_status('cpu-fallback-tpu-only'), (
      result.stderr[-3000:])
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(
          'launcher', 'cpu-fallback-tpu-only',
          CALL='tf.compat.v1.tpu.rewrite'))
  assert 'Traceback' not in result.stderr
  written = os.listdir(model_dir) if model_dir.exists() else []
  assert not [name for name in written if '.ckpt' in name], written
  faultutil.Record('launcher').add(
      '--cpu_fallback, a TPU-only call (tf.tpu.rewrite)', result.returncode,
      seconds, line, True)
