"""python -m trainer.verify_migration: estimator vs tf2 runner, step by step."""

import re
import subprocess
import sys

import pytest

from tests import testutil

pytestmark = testutil.requires_estimator

MAX_LINE = re.compile(r'^max \|dloss\|: (\S+) \(tolerance (\S+)\) \| '
                      r'max \|dw\|: (\S+) \| (OK|FAIL)$', re.M)
ROW = re.compile(r'^\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$', re.M)
RESNET18 = ['--model=resnet', '--resnet_depth=18', '--resnet_stem=small',
            '--train_batch_size=8', '--steps=3']


def _verify(tmp_path, *args):
  plot = tmp_path / 'losses.png'
  result = subprocess.run(
      [sys.executable, '-m', 'trainer.verify_migration', f'--plot={plot}',
       f'--work_dir={tmp_path / "work"}', *args],
      cwd=testutil.REPO_ROOT, capture_output=True, text=True, timeout=900)
  return result, plot


@pytest.mark.parametrize('args,steps,tolerance', [
    (['--steps=20'], 20, 1e-6),
    (['--steps=20', '--num_cpu_devices=2'], 20, 1e-5),
    (['--steps=20', '--num_cpu_devices=8'], 20, 1e-5),
    (['--steps=20', '--precision=bfloat16'], 20, 2e-3),
    (RESNET18, 3, 1e-6),
    (RESNET18 + ['--precision=bfloat16'], 3, 2e-3),
], ids=['mlp_f32', 'mlp_f32_2_replicas', 'mlp_f32_8_replicas', 'mlp_bf16',
        'resnet18_f32', 'resnet18_bf16'])
def test_runners_agree_within_tolerance(tmp_path, args, steps, tolerance):
  result, plot = _verify(tmp_path, *args)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
  rows = ROW.findall(result.stdout)
  assert [int(r[0]) for r in rows] == list(range(1, steps + 1))
  max_dloss, tol, _, verdict = MAX_LINE.search(result.stdout).groups()
  assert float(tol) == tolerance and verdict == 'OK'
  assert float(max_dloss) == max(float(r[3]) for r in rows) <= tolerance
  for _, est_loss, tf2_loss, dloss, _ in rows:
    assert abs(abs(float(est_loss) - float(tf2_loss)) - float(dloss)) < 1e-6
  assert plot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_exits_non_zero_beyond_tolerance(tmp_path):
  # Both runners are bit-identical without XLA; XLA:CPU on the tf2 side
  # computes bfloat16 matmuls in float32, so the losses differ.
  result, _ = _verify(tmp_path, '--steps=3', '--precision=bfloat16',
                      '--jit_compile=on', '--tolerance=0')
  assert result.returncode != 0
  assert MAX_LINE.search(result.stdout).group(4) == 'FAIL'
