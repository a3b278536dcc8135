"""The built-in input_fn against what the training step consumes.

  python -m bench.input                      # the default job (MLP, digits)
  python -m bench.input --augmentation=none  # any trainer flag applies
  python -m bench.input --smoke              # seconds: that it runs (CI)

Prints, in one run:
  1. the input_fn alone: batches/s and examples/s of the training input
     (in-memory table, and streamed as with --nocache), drained in a
     tf.function loop like the tf2 runner's, timed after a warm-up;
  2. what the training step consumes: steps/s of `python -m trainer.main
     --use_synthetic_data --mode=train` with the same flags (the lane's
     default runner; no host input work at all), the median of its progress
     lines after the first two, run before and after the same job on the
     real input;
  3. `input / consumption: X.XXx`: how many times faster the input is
     produced than consumed, from the means of the two input and the two
     synthetic figures (goal >= 5x: the job is compute-bound);
  4. JPEG decode and Inception-style augmentation of ResNet-50-size images
     (synthetic 500x375 JPEGs, as ImageNet's typical photo, to 224x224x3),
     in images/s on one host core, and the host cores a TPU v3-8 and a v4-8
     would need at published ResNet-50 training rates.

Other processes sharing the CPU lower every figure; compare the ratios of
one run, not figures across runs.
"""

import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup

if __name__ == '__main__':  # Before TensorFlow's first import.
  startup.prepare(sys.argv)

import io
import re
import statistics
import subprocess
import tempfile
import time

from absl import app
from absl import flags
import numpy as np
from PIL import Image
import tensorflow as tf

import flags as trainer_flags
from input_fn import features as feature_lib
from input_fn import preprocessing
from input_fn import tfrecord
from trainer import params as params_lib
from trainer.facade import install as facade

FLAGS = flags.FLAGS

_PROGRESS = re.compile(r'train \| step: (\d+) \| steps/sec: ([\d.]+)')

# Published ResNet-50 training rates (images/s), with their sources.
# TPU v3-8: google/flax examples/imagenet, "TPU v3-8 | 125100 steps | 4.4h"
# at batch_size 1024 (configs/tpu.py): 125,100 * 1,024 / 15,840 s. Wall
# time includes evaluation and compilation, so the training rate is higher.
FLAX_URL = ('https://github.com/google/flax/blob/main/examples/imagenet/'
            'README.md')
V3_8_RATE = 125_100 * 1_024 / (4.4 * 3600)
# TPU v4-8: no published images/s found for a v4-8; scaled from the v3-8
# rate by the peak bf16 compute per chip (v4 275 TFLOPS, v3 123 TFLOPS; both
# slices have 4 chips), per the Cloud TPU system-architecture pages.
V4_URL = 'https://cloud.google.com/tpu/docs/v4'
V3_URL = 'https://cloud.google.com/tpu/docs/v3'
V4_8_RATE = V3_8_RATE * 275 / 123


def _drain_rate(dataset, batches, warmup=200):
  """Batches/s of `dataset` pulled in a tf.function loop after `warmup`."""
  iterator = iter(dataset)

  @tf.function
  def drain(n):
    total = tf.constant(0.0)
    for _ in tf.range(n):
      features, _ = next(iterator)
      total += tf.cast(tf.reshape(features['image'], [-1])[0], tf.float32)
    return total

  drain(tf.constant(warmup)).numpy()
  start = time.perf_counter()
  drain(tf.constant(batches)).numpy()
  return batches / (time.perf_counter() - start)


def _trainer_args():
  """--flag=value of every trainer flag given to this benchmark."""
  names = flags.FlagValues()
  trainer_flags.define_flags(names)
  return [FLAGS[name].serialize() for name in names if FLAGS[name].present]


def _trainer_steps_per_sec(extra_args, steps):
  """Median steps/s of `python -m trainer.main --mode=train` progress lines,
  the first two (graph building, warm-up) left out."""
  args = _trainer_args() + [
      '--mode=train', f'--train_steps={steps}', '--iterations_per_loop=100',
      f'--save_checkpoints_steps={10 * steps}', *extra_args]
  with tempfile.TemporaryDirectory(prefix='bench-input-') as model_dir:
    result = subprocess.run(
        [sys.executable, '-m', 'trainer.main', f'--model_dir={model_dir}',
         *args], capture_output=True, text=True, check=False)
  if result.returncode:
    raise RuntimeError(f'trainer.main {" ".join(args)} failed:\n'
                       f'{result.stderr[-3000:]}')
  rates = [float(r) for _, r in _PROGRESS.findall(result.stderr)][2:]
  if not rates:
    raise RuntimeError('trainer.main printed too few progress lines; raise '
                       '--consumption_steps.')
  return statistics.median(rates)


def _synthetic_jpegs(count, width=500, height=375, seed=0):
  """Serialized examples of `count` photo-like JPEGs (quality 90)."""
  rng = np.random.RandomState(seed)
  records, sizes = [], []
  for label in range(count):
    coarse = rng.randint(0, 256, [12, 16, 3]).astype(np.uint8)
    smooth = np.asarray(Image.fromarray(coarse).resize((width, height),
                                                       Image.BICUBIC))
    noise = rng.normal(0, 12, smooth.shape)
    pixels = np.clip(smooth + noise, 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format='JPEG', quality=90)
    sizes.append(buffer.tell())
    records.append(feature_lib.make_example(buffer.getvalue(), b'jpeg',
                                            label % 1000, height, width, 3))
  return records, statistics.mean(sizes)


def _one_core_rate(records, fn, images, repeats=5):
  """Images/s of fn(record) on one host thread after a warm-up: the best of
  `repeats` timings (other processes on the CPU only ever slow it down)."""
  options = tf.data.Options()
  options.threading.private_threadpool_size = 1
  options.threading.max_intra_op_parallelism = 1
  dataset = tf.data.Dataset.from_tensor_slices(records).repeat().map(fn)
  dataset = dataset.with_options(options)
  iterator = iter(dataset)

  @tf.function
  def drain(n):
    total = tf.constant(0.0)
    for _ in tf.range(n):
      total += tf.cast(tf.reshape(next(iterator), [-1])[0], tf.float32)
    return total

  drain(tf.constant(10)).numpy()
  rates = []
  for _ in range(repeats):
    start = time.perf_counter()
    drain(tf.constant(images)).numpy()
    rates.append(images / (time.perf_counter() - start))
  return max(rates)


def jpeg_report(trainer_params, count, images):
  """Prints decode and augmentation rates per core and the cores needed."""
  records, mean_bytes = _synthetic_jpegs(count)
  params = dict(trainer_params, image_size=224, image_channels=3,
                augmentation='inception_crop')
  spec = feature_lib.FEATURE_SPEC

  def decode(record):
    parsed = tf.io.parse_single_example(record, spec)
    return preprocessing.decode(parsed, 3)

  def decode_augment(record):
    seed = tf.stack([tf.constant(0, tf.int64), tf.strings.to_hash_bucket_fast(
        record, 2**62)])
    return tfrecord.parse_and_preprocess(record, True, params, seed)[0][
        'image']

  decode_rate = _one_core_rate(records, decode, images)
  augment_rate = _one_core_rate(records, decode_augment, images)
  print(f'\nResNet-50 input on one host core ({count} synthetic 500x375 '
        f'JPEGs, mean {mean_bytes / 1024:.0f} KiB, to 224x224x3):')
  print(f'  decode                                 {decode_rate:7.0f} '
        'images/s per core')
  print(f'  decode + inception_crop + flip + resize {augment_rate:6.0f} '
        'images/s per core')
  print('Host cores to feed ResNet-50 training at published rates '
        '(decode + augmentation alone, nothing else on the host):')
  for name, rate, source in [
      ('TPU v3-8', V3_8_RATE, FLAX_URL + ' (125,100 steps x 1,024 in 4.4 h)'),
      ('TPU v4-8', V4_8_RATE, 'v3-8 rate x 275/123 TFLOPS per chip, '
       f'{V4_URL}, {V3_URL} (estimate: no published v4-8 images/s found)')]:
    print(f'  {name}: {rate:6.0f} images/s -> {rate / augment_rate:5.1f} '
          f'cores   [{source}]')


_SMOKE = {'batches': 50, 'consumption_steps': 300, 'jpeg_files': 2,
          'jpeg_images': 10}


def main(argv):
  del argv
  if FLAGS.smoke:  # A few steps of everything: that the benchmark runs.
    for name, value in _SMOKE.items():
      if not FLAGS[name].present:
        FLAGS[name].value = value
  params = params_lib.params_from_flags(FLAGS)
  batch = params['train_batch_size']
  train = dict(params, mode='train', batch_size=batch)
  print(f'TF {tf.__version__}, model {FLAGS.model}, batch {batch}, '
        f'augmentation {FLAGS.augmentation}, data {params["data_dir"]}')
  def input_rate(cache):
    return _drain_rate(tfrecord.input_fn(dict(train, cache=cache)),
                       FLAGS.batches)

  def show(name, rate, note=''):
    print(f'{name:<34} {rate:8.0f} batches/s {rate * batch:9.0f} examples/s'
          f'{note}')

  before = input_rate(params['cache'])
  show('input_fn', before, ' (before the trainer runs)')
  show('input_fn --nocache (streamed)', input_rate(False))
  def synthetic():
    rate = _trainer_steps_per_sec(['--use_synthetic_data'],
                                  FLAGS.consumption_steps)
    print(f'{"training step, synthetic input":<34} {rate:8.0f} steps/s   '
          '(trainer.main --use_synthetic_data --mode=train, median)')
    return rate

  consumed = synthetic()
  real = _trainer_steps_per_sec([], FLAGS.consumption_steps)
  if not FLAGS.smoke:  # Synthetic before and after: drift on a shared host.
    consumed = (consumed + synthetic()) / 2
  print(f'{"training step, real input":<34} {real:8.0f} steps/s   '
        f'({real / consumed:.2f}x synthetic, the mean of the synthetic '
        'runs; 1.00: compute-bound)')
  after = input_rate(params['cache'])
  show('input_fn', after, ' (after the trainer runs)')
  if FLAGS.jpeg_images:
    jpeg_report(params, FLAGS.jpeg_files, FLAGS.jpeg_images)
  produced = (before + after) / 2
  print(f'input / consumption: {produced / consumed:.2f}x (means: '
        f'{produced:.0f} input batches/s / {consumed:.0f} steps/s; goal >= 5x)')


if __name__ == '__main__':
  facade.install()  # Before model modules name tf.estimator (TF >= 2.16).
  trainer_flags.define_flags()
  flags.DEFINE_integer('batches', 5000, 'Timed input batches.', lower_bound=1)
  flags.DEFINE_integer('consumption_steps', 3000,
                       'Training steps per trainer.main run.', lower_bound=300)
  flags.DEFINE_integer('jpeg_files', 32, 'Synthetic JPEGs to make.',
                       lower_bound=1)
  flags.DEFINE_integer('jpeg_images', 500,
                       'Timed JPEG images per rate; 0 skips the JPEG part.',
                       lower_bound=0)
  flags.DEFINE_bool('smoke', False, 'A few steps of each part, in seconds: '
                    'checks that the benchmark runs, measures nothing.')
  app.run(main)
