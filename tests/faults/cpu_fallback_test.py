"""--cpu_fallback runs a program whose own --use_tpu=True wraps its
optimizer in CrossShardOptimizer (tensorflow/tpu's mnist does) as on a
one-core TPU: cross_replica_sum of one replica is the identity, so it
trains exactly as with --use_tpu=False."""

from tests.faults import faultutil

_ARGS = ['--mode=loop', '--train_steps=60', '--steps_per_eval=30']


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
             'CrossShardOptimizer', result.returncode, seconds,
             'trains as with --use_tpu=False: ' + final[0], True)
