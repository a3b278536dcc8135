"""trainer.memory: components true to dtype, TPU fit, CLI, XLA cross-check.

The XLA cross-check compiles one float32 training step with XLA:CPU in a
child process (XLA_FLAGS must be set before TensorFlow loads) and compares
its buffer assignment total with the report's peak: within 15%.
"""

import json
import os
import subprocess
import sys

from absl import flags
import pytest
import tensorflow as tf

import flags as trainer_flags
from tests import testutil
from trainer import params as params_lib
from trainer.memory import footprint as memory_footprint
from trainer.memory import report as memory_report
from trainer.memory import xla as memory_xla
from trainer.models import builtin

XLA_TOLERANCE = 0.15
_TF_VERSION = tuple(int(p) for p in tf.__version__.split('.')[:2])
MLP = ['--model=mlp', '--mlp_hidden_units=256', '--train_batch_size=64',
       '--num_cores=1']
RESNET = ['--model=resnet', '--resnet_depth=18', '--resnet_stem=small',
          '--image_size=16', '--train_batch_size=8', '--num_cores=1',
          '--optimizer=momentum']


def _footprint(**overrides):
  config = testutil.base_config(**overrides)
  return memory_footprint.footprint(builtin.model_fn(config.model), config)


def test_mlp_state_components_match_parameter_count():
  fp = _footprint(mlp_hidden_units=[256], train_batch_size=64, num_cores=1,
                  optimizer='adam')
  count = 784 * 256 + 256 + 256 * 10 + 10
  assert fp.parameter_bytes == 4 * count
  # Adam: m and v per variable, plus beta1_power and beta2_power.
  assert fp.optimizer_bytes == 2 * 4 * count + 8
  assert fp.gradient_bytes == 4 * 784 * 256  # The largest gradient.
  assert fp.input_bytes == 64 * 784 * 4 + 64 * 4
  assert fp.peak_bytes > fp.fixed_bytes + fp.activation_bytes


@pytest.mark.parametrize('overrides', [
    dict(mlp_hidden_units=[256], train_batch_size=64),
    dict(model='resnet', resnet_depth=18, image_size=16, train_batch_size=8,
         optimizer='momentum'),
])
def test_bfloat16_halves_activations_and_input(overrides):
  f32 = _footprint(num_cores=1, precision='float32', **overrides)
  bf16 = _footprint(num_cores=1, precision='bfloat16', **overrides)
  assert bf16.parameter_bytes == f32.parameter_bytes  # float32 masters.
  assert bf16.optimizer_bytes == f32.optimizer_bytes
  assert bf16.activation_bytes / f32.activation_bytes <= 0.55
  assert bf16.input_bytes < 0.55 * f32.input_bytes


@pytest.mark.parametrize('mode, width, classes', [
    ('batch', 2048, 10), ('dense', 2048, 10), ('logits', 64, 4096)])
def test_slicing_cuts_activations_kept_for_backward(mode, width, classes):
  common = dict(mlp_hidden_units=[width], num_classes=classes,
                train_batch_size=256, num_cores=1)
  plain = _footprint(**common)
  sliced = _footprint(num_slices=4, slice=mode, **common)
  assert sliced.activation_bytes <= 0.5 * plain.activation_bytes


def test_tpu_fit_and_largest_batch():
  fp = _footprint(mlp_hidden_units=[256], train_batch_size=64, num_cores=1)
  fit = memory_report.tpu_fit(fp)
  assert set(fit) == {'v2', 'v3', 'v4', 'v5e', 'v5p'}
  assert fit['v2']['hbm_bytes'] == 8 << 30
  assert fit['v5p']['hbm_bytes'] == 95 << 30
  for name, entry in fit.items():
    batch = entry['max_per_core_batch']
    assert entry['fits'] and batch > 64, name
    # The largest batch fits and one more example does not.
    grown = memory_footprint.Footprint(**dict(
        fp.__dict__, per_core_batch=batch))
    scale = batch / fp.per_core_batch
    for key in ('input_bytes', 'activation_bytes', 'transient_bytes'):
      setattr(grown, key, getattr(fp, key) * scale)
    assert grown.peak_bytes <= entry['hbm_bytes']
    assert grown.peak_bytes + fp.bytes_per_example > entry['hbm_bytes']
  assert fit['v5p']['max_per_core_batch'] > fit['v2']['max_per_core_batch']


def _params(args):
  """The Config of the trainer flags `args`, as trainer.memory builds it."""
  flag_values = flags.FlagValues()
  trainer_flags.define_flags(flag_values)
  flag_values(['memory_test'] + args)
  return params_lib.config_from_flags(flag_values)


def _run(module, args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  return subprocess.run([sys.executable, '-m', module] + args,
                        cwd=testutil.REPO_ROOT, env=env, capture_output=True,
                        text=True, timeout=600, check=False)


def test_cli_json_and_plot(tmp_path):
  png = tmp_path / 'memory.png'
  result = _run('trainer.memory', MLP + ['--json', f'--plot={png}'])
  assert result.returncode == 0, result.stderr[-2000:]
  report = json.loads(result.stdout)
  for key in ('parameter_bytes', 'optimizer_bytes', 'gradient_bytes',
              'activation_bytes', 'peak_bytes', 'tpu'):
    assert key in report
  assert report['tpu']['v3']['fits'] is True
  with open(png, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_cli_rejects_bad_slicing():
  result = _run('trainer.memory', MLP + ['--num_slices=4', '--slice=dense',
                                         '--model=resnet'])
  assert result.returncode != 0
  assert '--slice=dense' in result.stderr


@pytest.mark.parametrize('args', [
    MLP,
    MLP + ['--num_slices=4', '--slice=dense'],
    MLP + ['--num_slices=4', '--slice=logits'],
    MLP + ['--num_slices=4', '--slice=batch'],
    pytest.param(RESNET, marks=pytest.mark.skipif(
        _TF_VERSION >= (2, 16),
        reason='XLA:CPU of TF 2.16+ keeps every gradient live until the '
        'updates: the same ResNet-18 step measured 173.4 MB on TF 2.20 vs '
        '122.5 MB on TF 2.15 (+48.6 MiB, about all 42.7 MiB of gradients), '
        'unlike TPU, whose per-variable update order the report models; '
        'cross-checked on the TF 2.15 lane')),
], ids=['mlp', 'mlp-dense4', 'mlp-logits4', 'mlp-batch4', 'resnet18'])
def test_peak_within_15_percent_of_xla_cpu(args):
  xla = memory_xla.measure(_params(args))
  result = _run('trainer.memory', args + ['--json'])
  assert result.returncode == 0, result.stderr[-2000:]
  peak = json.loads(result.stdout)['peak_bytes']
  error = (peak - xla['total_bytes']) / xla['total_bytes']
  assert abs(error) <= XLA_TOLERANCE, (peak, xla)


def test_parse_buffer_assignment():
  text = ('allocation 0: size 100, parameter 0, shape |f32[25]|\n'
          'allocation 1: size 40, preallocated-temp:\n'
          'allocation 2: size 8, constant:\n'
          'Total bytes used: 148 (148B)\n')
  assert memory_xla.parse_buffer_assignment(text) == {
      'total_bytes': 148, 'parameter_bytes': 100, 'temp_bytes': 40}
  with pytest.raises(ValueError, match='Total bytes'):
    memory_xla.parse_buffer_assignment('allocation 0: size 1, constant:\n')
