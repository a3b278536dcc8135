"""XLA:CPU's buffer assignment for one training step: the report's cross-check.

XLA reads XLA_FLAGS once, when TensorFlow loads, so the measurement runs in a
child process: `measure(params)` starts `python -m trainer.memory.xla` with
`--xla_dump_to` set and the params as JSON on stdin; the child jit-compiles
and runs one training step of params' model_fn at the per-core batch and
prints the sizes XLA assigned as one JSON line. XLA:CPU computes bfloat16
matmuls in float32 (docs/memory.md), so only float32 figures are
comparable.
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile

_DUMP_FLAG = '--xla_dump_to='
_ALLOCATION = re.compile(r'^allocation \d+: size (\d+), (.*)$')
_TOTAL = re.compile(r'^Total bytes used: (\d+)')


def parse_buffer_assignment(text):
  """{total_bytes, parameter_bytes, temp_bytes} of a buffer-assignment dump."""
  total = parameters = temp = 0
  for line in text.splitlines():
    match = _ALLOCATION.match(line)
    if match:
      size, kind = int(match.group(1)), match.group(2)
      if kind.startswith('parameter'):
        parameters += size
      elif kind.startswith('preallocated-temp'):
        temp += size
      continue
    match = _TOTAL.match(line)
    if match:
      total = int(match.group(1))
  if not total:
    raise ValueError('no "Total bytes used" line in the buffer assignment.')
  return {'total_bytes': total, 'parameter_bytes': parameters,
          'temp_bytes': temp}


def largest_module(dump_dir):
  """Parsed buffer assignment of the largest module dumped in dump_dir."""
  files = glob.glob(os.path.join(dump_dir, '*buffer-assignment.txt'))
  if not files:
    raise ValueError(f'XLA dumped no buffer assignment into {dump_dir}; was '
                     'XLA_FLAGS set before TensorFlow was imported?')
  parsed = []
  for path in files:
    with open(path) as f:
      parsed.append(parse_buffer_assignment(f.read()))
  return max(parsed, key=lambda p: p['total_bytes'])


def run_one_step(model_fn, config):
  """Jit-compiles and runs one training step at the per-core batch."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from model_fn import precision  # pylint: disable=g-import-not-at-top
  from model_fn.spec import ModeKeys  # pylint: disable=g-import-not-at-top
  from trainer.memory import footprint  # pylint: disable=g-import-not-at-top
  batch = footprint.per_core_batch(config)
  params = config.as_params()  # What the model_fn reads.
  dtype = precision.compute_dtype(params)
  size, channels = config.image_size, config.image_channels
  from trainer import params as params_lib  # pylint: disable=g-import-not-at-top
  run_params = params_lib.replaced(params, batch_size=batch, use_tpu=False,
                                   model_dir=None, mode='train')

  def step(images, labels):
    spec = model_fn({'image': images}, labels, ModeKeys.TRAIN, run_params)
    with tf.control_dependencies([spec.train_op]):
      return tf.identity(spec.loss)

  wrapped = tf.compat.v1.wrap_function(step, [
      tf.TensorSpec([batch, size, size, channels], dtype),
      tf.TensorSpec([batch], tf.int32)])
  jitted = tf.function(lambda x, y: wrapped(x, y), jit_compile=True)
  images = tf.cast(tf.random.stateless_uniform(
      [batch, size, size, channels], seed=[1, 2]), dtype)
  labels = tf.random.stateless_uniform([batch], seed=[3, 4], maxval=config.num_classes,
      dtype=tf.int32)
  return float(jitted(images, labels))


def measure(config, timeout=1800):
  """XLA's figures for one training step under a Config, from a child
  process.

  {total_bytes, parameter_bytes, temp_bytes, loss}; RuntimeError with the
  child's stderr if it fails.
  """
  with tempfile.TemporaryDirectory(prefix='xla-dump-') as dump_dir:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
               XLA_FLAGS=f'{_DUMP_FLAG}{dump_dir} --xla_dump_hlo_as_text')
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    if __name__.split('.')[0] != 'trainer':  # Installed (setup.py): its
      root = None  # root holds generic names; keep the caller's directory.
    result = subprocess.run(
        [sys.executable, '-m', __name__],
        input=json.dumps(config.as_params()),
        cwd=root, env=env, capture_output=True, text=True, timeout=timeout,
        check=False)
    if result.returncode:
      raise RuntimeError(f'{__name__} failed:\n{result.stderr[-3000:]}')
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
  """The child: params JSON on stdin, one JSON line of figures on stdout."""
  dump_dir = next((f[len(_DUMP_FLAG):] for f in os.environ.get(
      'XLA_FLAGS', '').split() if f.startswith(_DUMP_FLAG)), None)
  if not dump_dir:
    raise SystemExit('Set XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_text" '
                     'and pass params as JSON on stdin (or call measure()).')
  from trainer import config as config_lib  # pylint: disable=g-import-not-at-top
  from trainer.models import registry  # pylint: disable=g-import-not-at-top
  config = config_lib.from_params(json.load(sys.stdin))
  loss = run_one_step(registry.resolve_model_fn(config.model), config)
  print(json.dumps(dict(largest_module(dump_dir), loss=loss)))


if __name__ == '__main__':
  main()
