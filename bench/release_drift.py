"""How far TensorFlow's own kernels drift between releases, on one input.

  python -m bench.release_drift            # every lane's venv that exists
  python -m bench.release_drift --smoke    # seconds: this interpreter twice

Each interpreter (.venv/legacy: TF 2.15, .venv/modern: 2.20, .venv/newest:
2.21) computes the same ops on the same seeded float32 input (numpy, so the
input is identical bit for bit) in a child process; the first is the
reference. Printed per op and interpreter: elements that differ from the
reference, and the largest difference in ulp. This is why the corpus's
TF 2.20 cells can match TF 2.15 only within rounding (docs/corpus.md).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LANES = ('legacy', 'modern', 'newest')
_SIZE = 1 << 16

_CHILD = r'''
import json, sys
import numpy as np
import tensorflow as tf
x = np.random.RandomState(0).uniform(-15, 15, %(size)d).astype(np.float32)
w = np.random.RandomState(1).normal(size=(256, 256)).astype(np.float32)
ops = {
    'sigmoid': lambda: tf.sigmoid(x),
    'tanh': lambda: tf.tanh(x),
    'exp': lambda: tf.exp(x / 2),
    'swish': lambda: x * tf.sigmoid(x),
    'matmul': lambda: tf.matmul(x.reshape(-1, 256), w),
    'softmax': lambda: tf.nn.softmax(x.reshape(-1, 256)),
}
out = {name: fn().numpy().ravel().view(np.int32).tolist()
       for name, fn in ops.items()}
json.dump({'version': tf.__version__, 'ops': out}, sys.stdout)
'''


def _run(python):
  result = subprocess.run(
      [python, '-c', _CHILD % {'size': _SIZE}], capture_output=True,
      text=True, check=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
               ONEDNN_MAX_CPU_ISA=os.environ.get('ONEDNN_MAX_CPU_ISA', 'AVX2')))
  return json.loads(result.stdout)


def _ulps(a, b):
  """Largest distance in units in the last place between two float32 arrays
  given as their int32 bit patterns (same sign: plain difference)."""
  a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
  a = np.where(a < 0, -(a & 0x7FFFFFFF), a)
  b = np.where(b < 0, -(b & 0x7FFFFFFF), b)
  return int(np.max(np.abs(a - b))) if a.size else 0


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  p.add_argument('--smoke', action='store_true')
  args = p.parse_args(argv[1:])
  if args.smoke:
    pythons = [sys.executable, sys.executable]
  else:
    pythons = [os.path.join(_REPO, '.venv', lane, 'bin', 'python')
               for lane in _LANES]
    pythons = [py for py in pythons if os.path.exists(py)]
    if len(pythons) < 2:
      sys.exit('bench.release_drift: needs two lanes (scripts/setup_env.sh)')
  runs = [_run(py) for py in pythons]
  ref = runs[0]
  print('reference: TF %s; %d float32 elements per op' % (ref['version'], _SIZE))
  for run in runs[1:]:
    for name, bits in sorted(run['ops'].items()):
      ref_bits = ref['ops'][name]
      differ = sum(1 for x, y in zip(bits, ref_bits) if x != y)
      print('TF %-7s %-8s %7d of %7d differ, max %d ulp'
            % (run['version'], name, differ, len(bits),
               _ulps(bits, ref_bits)))
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
