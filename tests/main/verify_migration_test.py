"""python -m trainer.verify_migration: two runners, step by step.

estimator,* pairs run on the legacy lane (TF 2.15) only; tf2,native on the
modern lane only, with the native runner's other tests. The bug-injection
tests break the native side in three ways a migration can and check that the
tool fails on each.
"""

import os

os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

# pylint: disable=g-import-not-at-top,wrong-import-position
import subprocess
import sys

import pytest
import tensorflow as tf

from model_fn.native import classifier
from tests import testutil
from tests import verify_output
from trainer import verify_migration
from trainer.models import registry

RESNET18 = ['--model=resnet', '--resnet_depth=18', '--resnet_stem=small',
            '--train_batch_size=8', '--image_size=8', '--steps=3']
DIGITS_CNN = ['--model=tests.legacy.digits_cnn:model_fn',
              '--input=tests.legacy.digits_cnn:train_input_fn', '--steps=10']
EPS = verify_output.EPS


def _verify(tmp_path, *args):
  plot = tmp_path / 'losses.png'
  result = subprocess.run(
      [sys.executable, '-m', 'trainer.verify_migration', f'--plot={plot}',
       f'--work_dir={tmp_path / "work"}', *args],
      cwd=testutil.REPO_ROOT, capture_output=True, text=True, timeout=900,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  return result, plot


def _check_ok(result, plot, steps, precision):
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
  verify_output.check_ok(result.stdout, steps, precision, plot)


# MIGRATION.md's commands run the MLP (float32: estimator,tf2 on one and two
# replicas, tf2,native, estimator,native) and the ResNet-18 (tf2,native,
# float32) comparisons, with these checks (migration_doc_test): not again here.
_ESTIMATOR_CASES = [
    (['--steps=20', '--precision=bfloat16'], 20, 'bfloat16'),
    (RESNET18, 3, 'float32'),
    (RESNET18 + ['--precision=bfloat16'], 3, 'bfloat16'),
    (DIGITS_CNN, 10, 'float32'),  # Dropout and batch norm, legacy-style.
]


@testutil.requires_estimator
@pytest.mark.parametrize('args,steps,precision', _ESTIMATOR_CASES, ids=[
    'mlp_bf16', 'resnet18_f32', 'resnet18_bf16', 'dropout_cnn_f32'])
def test_estimator_and_another_runner_agree(tmp_path, args, steps, precision):
  result, plot = _verify(tmp_path, '--runners=estimator,tf2', *args)
  _check_ok(result, plot, steps, precision)


# The native runner is the TF2-native end of the path: it is compared with
# the tf2 runner (and the tool's checks proven on it) on the modern lane only,
# as its other tests run there (tests/BUILD's modern_lane tags).
tf2_native_on_modern_lane = pytest.mark.skipif(
    testutil.HAS_ESTIMATOR, reason=(
        'the native runner is the TF2-native end of the path: compared with '
        'the tf2 runner on the modern lane'))


# Not compared here: ResNet-18 in bfloat16 on 2 replicas, where on some CPUs
# (this 2-core AVX2 machine, deterministically) the runners part at step 3
# (|dloss| 3.2e-2 > 1.8e-2; float32 agrees to 5e-7). Open; a check that
# passes either way (a non-strict xfail) would prove nothing.
@pytest.mark.parametrize('args,steps,precision', [
    (['--steps=20', '--precision=bfloat16'], 20, 'bfloat16'),
], ids=['mlp_bf16'])
@tf2_native_on_modern_lane
def test_tf2_and_native_agree(tmp_path, args, steps, precision):
  result, plot = _verify(tmp_path, '--runners=tf2,native', *args)
  _check_ok(result, plot, steps, precision)


@testutil.requires_estimator
def test_batch_statistics_over_replicas_are_named_not_failed(tmp_path):
  result, _ = _verify(tmp_path, '--runners=estimator,tf2', *RESNET18,
                      '--num_cpu_devices=2')
  assert result.returncode == verify_migration.NOT_COMPARABLE_STATUS
  assert 'Traceback' not in result.stderr
  assert 'differ by construction' in result.stderr
  assert '--runners=tf2,native' in result.stderr
  assert not verify_output.MAX_LINE.search(result.stdout)  # No bare FAIL.


@testutil.requires_estimator
def test_exits_non_zero_beyond_tolerance(tmp_path):
  # XLA:CPU on the tf2 side computes bfloat16 matmuls in float32.
  result, _ = _verify(tmp_path, '--runners=estimator,tf2', '--steps=3',
                      '--precision=bfloat16', '--jit_compile=on',
                      '--tolerance=0')
  assert result.returncode == 1
  assert verify_output.MAX_LINE.search(result.stdout).group(5) == 'FAIL'


def test_tolerances_are_derived_from_the_formats():
  assert verify_migration.relative_tolerance('float32', 20) == 160 * EPS
  assert verify_migration.relative_tolerance('bfloat16', 20) == 2.0 ** -7
  assert verify_migration.relative_tolerance('bfloat16', 3) == 2.0 ** -7
  assert verify_migration.loss_tolerance('float32', 10, [2.0, -3.0, 1.0]) == (
      80 * EPS * 3.0)


@pytest.mark.parametrize('value,message', [
    (['tf2'], 'give two of'),
    (['tf2', 'keras'], 'give two of'),
    (['tf2', 'tf2'], 'two different'),
])
def test_bad_runners_are_refused_by_flag(value, message):
  with pytest.raises(ValueError, match=f'--runners=.*{message}'):
    verify_migration.parse_runners(value)


@pytest.mark.skipif(testutil.HAS_ESTIMATOR, reason='Estimator exists here.')
def test_estimator_is_refused_without_estimator():
  with pytest.raises(ValueError, match='no tf.estimator'):
    verify_migration.parse_runners(['estimator', 'tf2'])


# -- bug injection: the native side computes something else -----------------


def _doubled_loss_scaling(model, optimizer, images, labels, params):
  """Gradients of 2 x loss (a wrong loss scaling); reports the loss."""
  variables = model.trainable_variables
  with tf.GradientTape() as tape:
    loss, _ = classifier.loss_and_logits(model, images, labels, params,
                                         training=True)
    scaled = loss * 2.0
  optimizer.apply_gradients(zip(tape.gradient(scaled, variables), variables))
  return loss


def _dropped_gradient(model, optimizer, images, labels, params):
  """The first variable's gradient is never applied."""
  variables = model.trainable_variables
  with tf.GradientTape() as tape:
    loss, _ = classifier.loss_and_logits(model, images, labels, params,
                                         training=True)
  gradients = tape.gradient(loss, variables)
  optimizer.apply_gradients(zip(gradients[1:], variables[1:]))
  return loss


_TRAIN_STEP = classifier.train_step


def _skipped_update_ops(model, optimizer, images, labels, params):
  """The batch-norm moving statistics are put back after the step."""
  stats = model.non_trainable_variables
  before = [tf.identity(v) for v in stats]
  with tf.control_dependencies(before):
    loss = _TRAIN_STEP(model, optimizer, images, labels, params)
  with tf.control_dependencies([loss]):
    restores = [v.assign(b) for v, b in zip(stats, before)]
  with tf.control_dependencies(restores):
    return tf.identity(loss)


def _compare(tmp_path, **overrides):
  params = testutil.base_params(model_dir=str(tmp_path), mode='train',
                                runner='tf2', **overrides)
  return verify_migration.compare(
      params, registry.resolve_model_fn(params['model']),
      registry.resolve_input_fn(params['input']), 3, str(tmp_path),
      ('tf2', 'native'))


_RESNET = {'model': 'resnet', 'image_size': 8, 'train_batch_size': 8,
           'optimizer': 'momentum'}


@tf2_native_on_modern_lane
@pytest.mark.parametrize('bug,overrides', [
    (_doubled_loss_scaling, {'optimizer': 'momentum'}),  # Adam would
    # undo most of it: its update does not depend on the gradient's scale.
    (_dropped_gradient, {}),
    (_skipped_update_ops, _RESNET),
], ids=['loss_times_2', 'dropped_gradient', 'skipped_update_ops'])
def test_injected_bugs_fail(tmp_path, monkeypatch, bug, overrides):
  monkeypatch.setattr(classifier, 'train_step', bug)
  comparison = _compare(tmp_path, **overrides)
  text = comparison.format()
  print(text)
  assert not comparison.ok(), text
  assert verify_output.MAX_LINE.search(text).group(5) == 'FAIL'
  if bug is _skipped_update_ops:  # The losses do not see it; the stats do.
    assert comparison.max_dloss <= comparison.loss_tolerance
    assert 'moving_' in comparison.worst_variable


@tf2_native_on_modern_lane
def test_the_same_comparison_without_a_bug_passes(tmp_path):
  comparison = _compare(tmp_path, **_RESNET)
  assert comparison.ok(), comparison.format()
