"""TF1 -> native checkpoint conversion, and training from the converted state."""

import os

os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')

# pylint: disable=g-import-not-at-top,wrong-import-position
import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from input_fn import inputs
from model_fn.native import classifier
from model_fn.native import optimization
from tests import native_tf1
from tests import testutil
from trainer.runners.native import convert
from trainer.engines.tf2 import engine as tf2_engine
from trainer.runtime import checkpoints
from trainer.models import builtin

# Per-step training loss, native vs TF1 from the same state, float32: the
# forward pass is the same; gradients and updates round differently in the
# last bits (op order, fused TF1 kernels), which a few steps of training
# amplify. 2e-6 relative is ~16 float32 ulps of the loss.
LOSS_RTOL = 2e-6


def _params(model, **overrides):
  defaults = {'image_size': 8 if model == 'resnet' else 28,
              'resnet_depth': 18}
  return testutil.base_params(model=model, **dict(defaults, **overrides))


def _tf1_checkpoint(params, model_dir, steps=2):
  batches = native_tf1.batches(params, steps)
  run = native_tf1.TF1Run(params, batches[0][0].shape)
  run.train(batches)
  path = run.save(model_dir)
  run.close()
  return path


def _restored(params, path):
  model = builtin.build_native_model(params)
  optimizer = optimization.make_optimizer(params)
  optimizer.build(model.trainable_variables)
  checkpoints.make_checkpoint(model, optimizer).restore(
      path).assert_existing_objects_matched()
  return model, optimizer


@pytest.mark.parametrize('model,optimizer', [('mlp', 'adam'),
                                             ('resnet', 'momentum')])
def test_round_trip_copies_every_variable_and_the_step(tmp_path, model,
                                                       optimizer):
  params = _params(model, optimizer=optimizer)
  source = _tf1_checkpoint(params, str(tmp_path / 'tf1'))
  path, rows = convert.convert(str(tmp_path / 'tf1'), params,
                               str(tmp_path / 'native'))
  assert os.path.basename(path) == 'ckpt-2'
  assert tf.train.latest_checkpoint(str(tmp_path / 'native')) == path
  reader = tf.train.load_checkpoint(source)
  tf1_names = set(reader.get_variable_to_shape_map())
  assert {r.tf1_name for r in rows if not r.tf1_name.startswith('(')} == (
      tf1_names)  # Every TF1 variable used, once.
  native, native_optimizer = _restored(params, path)
  assert int(native_optimizer.iterations.numpy()) == 2
  for name, variable in native.tf1_variables().items():
    np.testing.assert_array_equal(variable.numpy(), reader.get_tensor(name))
    for suffix, slot in optimization.tf1_slots(native_optimizer,
                                               variable).items():
      np.testing.assert_array_equal(slot.numpy(),
                                    reader.get_tensor(f'{name}/{suffix}'))
  slot_rows = [r for r in rows if r.tf1_name.endswith(('/Adam', '/Momentum'))]
  assert slot_rows and all(r.object_path.startswith('optimizer/')
                           for r in slot_rows)


def test_model_mismatch_lists_the_variables_and_writes_nothing(tmp_path):
  _tf1_checkpoint(_params('mlp', mlp_hidden_units=[16]), str(tmp_path / 'tf1'))
  output = str(tmp_path / 'native')
  with pytest.raises(convert.ConversionError) as error:
    convert.convert(str(tmp_path / 'tf1'), _params(
        'mlp', mlp_hidden_units=[8]), output)
  message = str(error.value)
  assert 'mlp/dense1/kernel: TF1 [784, 16], native model/dense1/kernel ' \
         '[784, 8]' in message
  assert 'mlp/logits/kernel/Adam: TF1 [16, 10]' in message
  assert not os.path.exists(output)
  assert not [p for p in os.listdir(tmp_path) if 'incomplete' in p]


def test_optimizer_mismatch_lists_unused_and_missing(tmp_path):
  _tf1_checkpoint(_params('mlp', optimizer='momentum'), str(tmp_path / 'tf1'))
  with pytest.raises(convert.ConversionError) as error:
    convert.convert(str(tmp_path / 'tf1'), _params('mlp', optimizer='adam'),
                    str(tmp_path / 'native'))
  message = str(error.value)
  assert 'unused TF1 variable mlp/dense1/kernel/Momentum [784, 16]' in message
  assert 'missing TF1 variable mlp/dense1/kernel/Adam (for native ' \
         'optimizer/' in message
  assert 'missing TF1 variable beta1_power' in message


def test_inconsistent_adam_powers_are_refused(tmp_path):
  source = _tf1_checkpoint(_params('mlp'), str(tmp_path / 'tf1'))
  reader = tf.train.load_checkpoint(source)
  values = {n: reader.get_tensor(n)
            for n in reader.get_variable_to_shape_map()}
  values['global_step'] = np.int64(7)  # beta powers say 2 steps.
  model, optimizer, root = convert.native_state(_params('mlp'))
  with pytest.raises(convert.ConversionError, match='not Adam.s after '
                     'global_step=7 steps'):
    convert.plan(values, model, optimizer, root)


def test_refuses_an_output_with_checkpoints_and_an_object_based_source(
    tmp_path):
  params = _params('mlp')
  _tf1_checkpoint(params, str(tmp_path / 'tf1'))
  path, _ = convert.convert(str(tmp_path / 'tf1'), params,
                            str(tmp_path / 'native'))
  with pytest.raises(convert.ConversionError, match='already holds'):
    convert.convert(str(tmp_path / 'tf1'), params, str(tmp_path / 'native'))
  with pytest.raises(convert.ConversionError, match='already an object-based'):
    convert.convert(path, params, str(tmp_path / 'again'))
  os.makedirs(tmp_path / 'empty')
  with pytest.raises(convert.ConversionError, match='no checkpoint in'):
    convert.convert(str(tmp_path / 'empty'), params, str(tmp_path / 'x'))


@pytest.mark.parametrize('model,optimizer,learning_rate', [
    ('mlp', 'adam', 1e-3), ('mlp', 'momentum', 0.05),
    ('resnet', 'adam', 1e-3), ('resnet', 'momentum', 0.01)])
def test_native_training_continues_the_tf1_losses(tmp_path, model, optimizer,
                                                  learning_rate):
  """Same converted state, same batches, warmup + cosine (the rate changes
  every step), weight decay and label smoothing: same loss per step."""
  params = _params(model, optimizer=optimizer, learning_rate=learning_rate,
                   lr_schedule='cosine', warmup_steps=3, train_steps=10,
                   weight_decay=1e-3, label_smoothing=0.1)
  batches = native_tf1.batches(params, 10)
  run = native_tf1.TF1Run(params, batches[0][0].shape)
  run.train(batches[:2])  # Non-zero slots and moved statistics.
  run.save(str(tmp_path / 'tf1'))
  expected = run.train(batches[2:])
  run.close()
  path, _ = convert.convert(str(tmp_path / 'tf1'), params,
                            str(tmp_path / 'native'))
  native, native_optimizer = _restored(params, path)
  step = tf.function(lambda x, y: classifier.train_step(
      native, native_optimizer, x, y, params))
  got = np.array([float(step(x, y)) for x, y in batches[2:]])
  print(f'{model} {optimizer}: max |dloss| over {len(got)} steps '
        f'{np.abs(got - expected).max():.3g} (losses {expected[0]:.4f}..'
        f'{expected[-1]:.4f})')
  np.testing.assert_allclose(got, expected, rtol=LOSS_RTOL, atol=0)
  assert int(native_optimizer.iterations.numpy()) == 10


def test_command_line_on_a_tf2_runner_checkpoint(tmp_path):
  """`python -m trainer.runners.native.convert` on what the tf2 runner
  (`trainer.main --runner=tf2`) wrote: prints the mapping, writes ckpt-2."""
  model_dir = str(tmp_path / 'tf2')
  params = testutil.base_config(runner='tf2', model_dir=model_dir,
                                train_steps=2, iterations_per_loop=2,
                                mlp_hidden_units=[16])
  tf2_engine.Tf2Engine(params, builtin.model_fn('mlp'),
                       inputs.INPUT_FNS[params.input]).train(2)
  assert testutil.latest_step(model_dir) == 2
  output = str(tmp_path / 'native')
  result = subprocess.run(
      [sys.executable, '-m', 'trainer.runners.native.convert',
       f'--checkpoint={model_dir}', '--model=mlp', '--mlp_hidden_units=16',
       f'--output={output}'], cwd=testutil.REPO_ROOT, capture_output=True,
      text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.splitlines()
  assert any(line.startswith('mlp/dense1/kernel ') and
             line.endswith('-> model/dense1/kernel') for line in lines), lines
  # The step is the optimizer's iterations, tracked at the checkpoint's root
  # as global_step (trainer/runtime/checkpoints.py): one key on every Keras.
  assert any(line.startswith('global_step ') and '-> global_step  (step)'
             in line for line in lines), lines
  assert lines[-1] == f'converted: {output}/ckpt-2'

  result = subprocess.run(
      [sys.executable, '-m', 'trainer.runners.native.convert',
       f'--checkpoint={model_dir}', '--model=mlp', '--mlp_hidden_units=32',
       f'--output={tmp_path / "bad"}'], cwd=testutil.REPO_ROOT,
      capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 1
  assert 'error: the TF1 checkpoint does not match' in result.stderr
  assert 'mlp/dense1/kernel: TF1 [784, 16]' in result.stderr


# Runs in a child process: the CPU must be split before TensorFlow starts.
_TWO_REPLICAS = r"""
import json, os, sys
os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices('CPU')[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from trainer.facade import install as facade
facade.install()
from input_fn import inputs
from model_fn.native import classifier
from model_fn.native import optimization
from tests import native_tf1
from tests import testutil
from trainer.models import builtin
from trainer.runtime import checkpoints
from trainer.runners.native import convert
from trainer.engines.tf2 import engine as tf2_engine
model_dir = sys.argv[1]
params = testutil.base_params(
    optimizer='adam', lr_schedule='cosine', warmup_steps=2, train_steps=8,
    weight_decay=1e-3, label_smoothing=0.1)
batches = native_tf1.batches(params, 8, batch_size=8)
run = native_tf1.TF1Run(params, batches[0][0].shape)
run.train(batches[:2])
run.save(model_dir + '/tf1')
expected = run.train(batches[2:])
path, _ = convert.convert(model_dir + '/tf1', params, model_dir + '/native')
strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
with strategy.scope():
  model = builtin.build_native_model(params)
  optimizer = optimization.make_optimizer(params)
  optimizer.build(model.trainable_variables)
  checkpoints.make_checkpoint(model, optimizer).restore(
      path).assert_existing_objects_matched()

@tf.function
def step(x, y):
  losses = strategy.run(lambda x, y: classifier.train_step(
      model, optimizer, x, y, params), args=(x, y))
  return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

got = []
for images, labels in batches[2:]:
  halves = strategy.experimental_distribute_values_from_function(
      lambda ctx: tuple(a[4 * ctx.replica_id_in_sync_group:][:4]
                        for a in (images, labels)))
  got.append(float(step(*halves)))
print(json.dumps({'replicas': strategy.num_replicas_in_sync,
                  'expected': expected.tolist(), 'got': got}))
"""


def test_two_replicas_continue_the_tf1_losses(tmp_path):
  """MirroredStrategy over 2 CPU devices, each half of the TF1 batch: the
  loss is scaled by 1/replicas and gradients summed, as the TF1 runners do."""
  result = subprocess.run(
      [sys.executable, '-c', _TWO_REPLICAS, str(tmp_path)],
      cwd=testutil.REPO_ROOT, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stderr[-3000:]
  out = json.loads(result.stdout.splitlines()[-1])
  assert out['replicas'] == 2
  got, expected = np.array(out['got']), np.array(out['expected'])
  print(f'mlp adam, 2 replicas: max |dloss| {np.abs(got - expected).max():.3g}')
  np.testing.assert_allclose(got, expected, rtol=LOSS_RTOL, atol=0)
