"""What bfloat16 and slicing buy: memory figures and the CPU step-time cost.

  python -m bench.memory            # about 3 minutes on 2 cores
  python -m bench.memory --smoke    # seconds: a small MLP, that it runs (CI)

Prints, from trainer.memory's graph analysis (true to dtype, nothing runs):
  * ResNet-50 (224x224, per-core batch 64), a wide MLP and a many-class MLP:
    bf16 / f32
    activation bytes (goal <= 0.55), and for each slicing mode k=4 / unsliced
    peak (goal <= 0.40 on an activation-dominated configuration);
and, by running a smaller wide MLP on this CPU (float32):
  * ms per training step of each slicing mode against unsliced (TF graph,
    no XLA), and XLA:CPU's buffer-assignment total for each (ground truth
    for float32; the report's peak beside it).
"""

import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup

if __name__ == '__main__':  # Before TensorFlow's first import.
  startup.prepare(sys.argv)

import statistics
import time

from absl import app
from absl import flags
import tensorflow as tf

import flags as trainer_flags
from model_fn.spec import ModeKeys
from trainer import params as params_lib
from trainer.facade import install as facade
from trainer.memory import footprint as memory_footprint
from trainer.memory import xla as memory_xla
from trainer.models import builtin

K = 4
RESNET50 = dict(model='resnet', resnet_depth=50, resnet_stem='imagenet',
                image_size=224, image_channels=3, num_classes=1000,
                optimizer='momentum', train_batch_size=64, num_cores=1)
WIDE_MLP = dict(model='mlp', mlp_hidden_units=[8192], num_classes=1024,
                optimizer='momentum', train_batch_size=8192, num_cores=1)
MANY_CLASSES = dict(model='mlp', mlp_hidden_units=[512], num_classes=65536,
                    optimizer='momentum', train_batch_size=4096, num_cores=1)
CPU_MLP = dict(model='mlp', mlp_hidden_units=[2048], num_classes=2048,
               optimizer='momentum', train_batch_size=512, num_cores=1)
SMALL_MLP = dict(model='mlp', mlp_hidden_units=[256], num_classes=64,
                 optimizer='momentum', train_batch_size=64, num_cores=1)
TIMED_STEPS = 10


def _args(config, **overrides):
  """Trainer command-line flags for config + overrides."""
  def value(v):
    return ','.join(map(str, v)) if isinstance(v, list) else v
  return [f'--{k}={value(v)}' for k, v in dict(config, **overrides).items()]


def _config(config, **overrides):
  """The validated Config, parsed from flags as trainer.main would."""
  flag_values = flags.FlagValues()
  trainer_flags.define_flags(flag_values)
  flag_values(['bench'] + _args(config, **overrides))
  return params_lib.config_from_flags(flag_values)


def _params(config, **overrides):
  """Its params dict (what a model_fn reads)."""
  return _config(config, **overrides).as_params()


def _footprint(config, **overrides):
  settings = _config(config, **overrides)
  return memory_footprint.footprint(builtin.model_fn(settings.model),
                                    settings)


def _mib(n):
  return f'{n / (1 << 20):9.1f} MiB'


def memory_figures(name, config, modes):
  """Prints bf16/f32 activations and k=K/unsliced peaks for `modes`."""
  f32 = _footprint(config)
  bf16 = _footprint(config, precision='bfloat16')
  print(f'{name}: float32 peak {_mib(f32.peak_bytes)}, activations kept '
        f'{_mib(f32.activation_bytes)}; fixed (params+slots+grad) '
        f'{_mib(f32.fixed_bytes)}')
  ratio = bf16.activation_bytes / f32.activation_bytes
  print(f'  bf16/f32 activation bytes: {ratio:.3f} (goal <= 0.55); bf16 peak '
        f'{_mib(bf16.peak_bytes)} = {bf16.peak_bytes / f32.peak_bytes:.3f} '
        'of f32')
  for mode in modes:
    for precision, plain in (('float32', f32), ('bfloat16', bf16)):
      sliced = _footprint(config, precision=precision, num_slices=K,
                          slice=mode)
      print(f'  {precision:8} slice={mode:6} k={K}: peak {_mib(sliced.peak_bytes)}'
            f', k={K}/unsliced peak {sliced.peak_bytes / plain.peak_bytes:.3f}'
            f' (activations {sliced.activation_bytes / plain.activation_bytes:.3f})')


def _step_ms(params):
  """Median ms of a TF-graph training step (no XLA) of params' model."""
  batch = params['train_batch_size']
  with tf.Graph().as_default():
    images = tf.random.uniform([batch, 28, 28, 1])
    labels = tf.random.uniform([batch], maxval=params['num_classes'],
                               dtype=tf.int32)
    spec = builtin.model_fn(params['model'])(
        {'image': images}, labels, ModeKeys.TRAIN,
        dict(params, batch_size=batch))
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      for _ in range(3):
        sess.run(spec.train_op)
      times = []
      for _ in range(_timed_steps()):
        start = time.perf_counter()
        sess.run(spec.train_op)
        times.append(time.perf_counter() - start)
  return 1000 * statistics.median(times)


def cpu_figures(config):
  """Prints step time and XLA:CPU bytes per slicing mode on this machine."""
  print(f'CPU, float32, MLP 784-{config["mlp_hidden_units"][0]}-'
        f'{config["num_classes"]}, batch {config["train_batch_size"]}:')
  base_ms = base_xla = None
  for mode in (None, 'batch', 'dense', 'logits'):
    overrides = dict(num_slices=K, slice=mode) if mode else {}
    ms = _step_ms(_params(config, **overrides))
    xla = memory_xla.measure(_config(config, **overrides))['total_bytes']
    report = _footprint(config, **overrides).peak_bytes
    base_ms, base_xla = base_ms or ms, base_xla or xla
    print(f'  {mode or "unsliced":8}: {ms:7.1f} ms/step ({ms / base_ms:.2f}x)'
          f'; XLA:CPU total {_mib(xla)} ({xla / base_xla:.3f}x), report '
          f'peak {_mib(report)} ({100 * (report - xla) / xla:+.1f}%)')


def _timed_steps():
  return 2 if _smoke() else TIMED_STEPS


def _smoke():
  return flags.FLAGS.smoke


def main(argv):
  if argv[1:]:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  if _smoke():  # A small MLP through every part: that the benchmark runs.
    memory_figures('Small MLP 784-256-64, batch 64 (--smoke)', SMALL_MLP,
                   ('batch', 'dense', 'logits'))
    cpu_figures(SMALL_MLP)
    return
  memory_figures('ResNet-50 224x224, per-core batch 64, momentum', RESNET50,
                 ('batch', 'logits'))
  memory_figures('Wide MLP 784-8192-1024, per-core batch 8192, momentum',
                 WIDE_MLP, ('batch', 'dense', 'logits'))
  memory_figures('Many-class MLP 784-512-65536, per-core batch 4096, '
                 'momentum', MANY_CLASSES, ('batch', 'logits'))
  cpu_figures(CPU_MLP)


if __name__ == '__main__':
  facade.install()  # Before model modules name tf.estimator (TF >= 2.16).
  flags.DEFINE_bool('smoke', False, 'A small MLP through every part, in '
                    'seconds: checks that the benchmark runs.')
  app.run(main)
