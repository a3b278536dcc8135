"""Every benchmark under bench/ runs in its smoke mode and prints its figures.

The full runs stay manual (minutes each); these make a broken benchmark fail
CI. Each runs as `python -m bench.NAME --smoke` in a subprocess, as a user
would run it, and must print the lines that carry its figures.
"""

import os
import re
import subprocess
import sys

import pytest

from tests import testutil

# bench module -> regexes its smoke output must match (one figure each).
_EXPECTED = {
    'checkpoint_fit': [r'^mlp checkpoint: \d+ variables',
                       r'^read the checkpoint map\s+[\d.]+ ms',
                       r'^check_saver \(whole check\)\s+[\d.]+ ms',
                       r'^restore, for scale\s+[\d.]+ ms'],
    'facade': [r'^dnn\s+[\d.]+ \([\d.]+-[\d.]+\)',
               r'^facade/reference steps_per_sec: [\d.]+ \([\d.]+-[\d.]+\), '
               r'peak_rss: [\d.]+$'],
    'input': [r'input_fn\s+[\d.]+ batches/s',
              r'training step, synthetic input\s+[\d.]+ steps/s',
              r'training step, real input\s+[\d.]+ steps/s\s+\([\d.]+x synthetic',
              r'decode \+ inception_crop \+ flip \+ resize\s+[\d.]+ images/s',
              r'input / consumption: [\d.]+x'],
    'memory': [r'bf16/f32 activation bytes: [\d.]+',
               r'slice=dense\s+k=4: peak\s+[\d.]+ MiB',
               r'unsliced:\s+[\d.]+ ms/step \(1\.00x\); XLA:CPU total'],
    'release_drift': [r'^reference: TF [\d.]+',
                      r'^TF [\d.]+\s+sigmoid\s+0 of\s+\d+ differ, max 0 ulp'],
    'startup': [r'^\w+\s+import tensorflow\s+-\s+[\d.]+ \(',
                r'^\w+\s+trainer\.main --runner=\w+\s+[\d.]+ \([\d.]+-[\d.]+\)'
                r'\s+[\d.]+ \('],
    'runners': [r'^tf2\s+[\d.]+\s+[\d.]+', r'^keras_fit\s+[\d.]+',
                r'^native\s+[\d.]+', r'tf2 / keras_fit: [\d.]+x'],
}


# bench.facade drives .venv/legacy (the reference) and .venv/modern.
_LANES = [os.path.join(testutil.REPO_ROOT, '.venv', lane, 'bin', 'python')
          for lane in ('legacy', 'modern')]


@pytest.mark.parametrize('name', sorted(_EXPECTED))
def test_benchmark_smoke_mode_prints_its_figures(name):
  if name == 'facade' and not all(os.path.exists(p) for p in _LANES):
    pytest.skip('needs both .venv/legacy and .venv/modern '
                '(scripts/setup_env.sh)')
  result = subprocess.run(
      [sys.executable, '-m', f'bench.{name}', '--smoke'], cwd=testutil.REPO_ROOT,
      capture_output=True, text=True, timeout=testutil.HANG_TIMEOUT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stderr[-3000:]
  for pattern in _EXPECTED[name]:
    assert re.search(pattern, result.stdout, re.M), (
        f'bench.{name} --smoke printed no line matching {pattern!r}:\n'
        f'{result.stdout[-2000:]}')
