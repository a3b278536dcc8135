"""What every program of bench/programs measures, written as one JSON file.

A program (an ordinary Estimator script) calls `Figures(FLAGS.out)`, wraps
each of its calls in `figures.phase(NAME)` and passes `figures.hook()` to
`train`; `figures.serve(export_dir, inputs)` times the exported SavedModel's
serving signature; `figures.write()` adds CPU seconds and peak RSS and
writes the file. Nothing here depends on the TensorFlow version or on
Estimator: the same code runs under TF 2.15's Estimator and the facade.

Figures (keys of the JSON object):
  steps_per_sec  global steps per second of train(), counted from the first
                 hook call at or past --warmup_steps to the last (graph
                 building, session start and the final checkpoint left out)
  NAME_s         wall seconds of each phase (train, evaluate, predict, export)
  cpu_s          user + system CPU seconds of the process (all threads)
  peak_rss_mb    resource.getrusage(RUSAGE_SELF).ru_maxrss, before serving
  serve_ms       median ms of one call of the export's serving signature
"""

import json
import os
import resource
import statistics
import time

from absl import flags
import tensorflow as tf

flags.DEFINE_string('out', None, 'Where to write the figures (JSON).')
flags.DEFINE_string('model_dir', None, 'The Estimator model_dir.')
flags.DEFINE_integer('train_steps', 2000, 'Training steps.')
flags.DEFINE_integer('warmup_steps', 200, 'Steps before steps/s counts.')
flags.DEFINE_integer('eval_steps', 20, 'Evaluation steps.')
flags.DEFINE_integer('serve_calls', 200, 'Timed calls of the export.')
flags.DEFINE_integer('batch_size', 128, 'Global batch size.')

FLAGS = flags.FLAGS


class _StepRate(tf.compat.v1.train.SessionRunHook):
  """Global steps/s after `warmup` steps, read with every session.run."""

  def __init__(self, warmup, figures):
    self._warmup = warmup
    self._figures = figures
    self._first = self._last = None

  def begin(self):
    self._step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._step)

  def after_run(self, run_context, run_values):
    step, now = int(run_values.results), time.perf_counter()
    if self._first is None:
      if step >= self._warmup:
        self._first = (step, now)
    else:
      self._last = (step, now)
      (s0, t0), (s1, t1) = self._first, self._last
      if t1 > t0:
        self._figures.values['steps_per_sec'] = (s1 - s0) / (t1 - t0)


class Figures:
  """The figures of one run of a program (see the module docstring)."""

  def __init__(self, out):
    self.out = out
    self.values = {}

  def hook(self, warmup=None):
    return _StepRate(FLAGS.warmup_steps if warmup is None else warmup, self)

  def phase(self, name):
    figures = self

    class _Phase:
      def __enter__(self):
        self.start = time.perf_counter()

      def __exit__(self, *unused):
        figures.values[f'{name}_s'] = time.perf_counter() - self.start

    return _Phase()

  def serve(self, export_dir, inputs):
    """Median ms of a call of export_dir's serving_default on `inputs`."""
    self._memory()
    loaded = tf.saved_model.load(export_dir, tags=['serve'])
    signature = loaded.signatures['serving_default']
    signature(**inputs)  # The first call traces.
    times = []
    for _ in range(FLAGS.serve_calls):
      start = time.perf_counter()
      signature(**inputs)
      times.append(time.perf_counter() - start)
    self.values['serve_ms'] = statistics.median(times) * 1e3

  def _memory(self):
    if 'peak_rss_mb' not in self.values:
      self.values['peak_rss_mb'] = resource.getrusage(
          resource.RUSAGE_SELF).ru_maxrss / 1024

  def write(self):
    self._memory()
    times = os.times()
    self.values['cpu_s'] = times.user + times.system
    self.values['tf_version'] = tf.__version__
    if self.out:
      with open(self.out, 'w') as f:
        json.dump(self.values, f)
    print(json.dumps(self.values))

