"""Proves a model_fn trains the same under the estimator and tf2 runners.

  python -m trainer.verify_migration --model=mlp --steps=20
  python -m trainer.verify_migration --model=resnet --resnet_depth=18 \\
      --precision=bfloat16 --num_cpu_devices=2 --steps=20

From one initial checkpoint and the same batches, runs --steps training steps
under TPUEstimator and under the tf2 runner, prints a per-step table (both
losses, |delta loss|, max |delta weight| over trainable variables) and a last
line with the maxima, writes a PNG of both loss curves, and exits non-zero if
max |delta loss| exceeds the tolerance (default by configuration: float32
on one replica 1e-6, several replicas 1e-5, bfloat16 2e-3). Runs on TF
with Estimator (the legacy lane); --augmentation defaults to none here.
"""

import os
import shutil
import sys
import tempfile

from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

import flags as trainer_flags
from model_fn import layers
from trainer import controller
from trainer import params as params_lib
from trainer import registry
from trainer import runners
from trainer import user_flags
from trainer.compat import estimator as estimator_compat
from trainer.tf2 import strategy as strategy_lib

FLAGS = flags.FLAGS
TOLERANCES = {'float32': 1e-6, 'float32_replicas': 1e-5, 'bfloat16': 2e-3}


def define_flags(argv=None):
  """The trainer's flags (beside those of the model modules argv names,
  trainer/user_flags.py) plus this tool's; --augmentation defaults to none.

  The built-in input_fn is reproducible with augmentation too (stateless
  per-example seeds), and the MLP agrees within 1e-6 with it; ResNet-18 in
  float32 with pad_crop measured 3.1e-6 (XLA on the tf2 side only), so the
  stated tolerances are for unaugmented batches.
  """
  user_flags.define_all(sys.argv if argv is None else argv,
                        trainer_flags.define_flags)
  FLAGS.set_default('augmentation', 'none')
  flags.DEFINE_integer('steps', 20, 'Training steps compared.', lower_bound=1)
  flags.DEFINE_string('plot', None,
                      'PNG of both loss curves. Default: WORK_DIR/losses.png.')
  flags.DEFINE_string('work_dir', None,
                      'Checkpoints of both runs. Default: a new temp dir.')
  flags.DEFINE_float('tolerance', None,
                     'Max |delta loss| allowed. Default: by precision and '
                     'replicas (1e-6, 1e-5, 2e-3).', lower_bound=0.0)


def default_tolerance(params):
  """The tolerance in TOLERANCES for params' precision and replica count."""
  if params['precision'] == 'bfloat16':
    return TOLERANCES['bfloat16']
  if params.get('num_cpu_devices', 1) > 1:
    return TOLERANCES['float32_replicas']
  return TOLERANCES['float32']


class _StepRecorder(tf.compat.v1.train.SessionRunHook):
  """Records the loss and the trainable variables after every step."""

  def __init__(self):
    self.losses, self.weights = [], []

  def begin(self):
    self._loss = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)[-1]
    self._vars = {layers.variable_name(v): v
                  for v in tf.compat.v1.trainable_variables()}

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    self.losses.append(float(run_values.results))
    self.weights.append(run_context.session.run(self._vars))


def _run_estimator(params, model_fn, input_fn, steps):
  runner = runners.make_runner(dict(params, runner='estimator'), model_fn,
                               input_fn)
  recorder = _StepRecorder()
  runner.estimator.train(runner.input_fn('train'),
                         max_steps=steps, hooks=[recorder])
  return recorder.losses, recorder.weights


def _run_tf2(params, model_fn, input_fn, steps):
  runner = runners.make_runner(dict(params, runner='tf2'), model_fn, input_fn)
  trainable = {layers.variable_name(v)
               for v in runner.module.trainable_variables}
  losses, weights = [], []
  for _ in range(steps):
    losses.append(float(runner.train_steps(1)[0]))
    if not trainable:
      trainable = {layers.variable_name(v)
                   for v in runner.module.trainable_variables}
    values = runner.variables()
    weights.append({n: values[n] for n in trainable})
  return losses, weights


def _initial_checkpoint(params, model_fn, input_fn, directory):
  """Builds the model once under the tf2 runner and saves step 0 in
  `directory`; both runs start from it."""
  runner = runners.make_runner(
      dict(params, runner='tf2', model_dir=directory), model_fn, input_fn)
  runner.train_steps(0)
  return runner.save_checkpoint()


def max_weight_diff(a, b):
  """max |a - b| over the variables of both dicts (names must match)."""
  if a.keys() != b.keys():
    raise ValueError('The runners made different variables: only estimator '
                     f'{sorted(a.keys() - b.keys())[:5]}, only tf2 '
                     f'{sorted(b.keys() - a.keys())[:5]}.')
  return max(float(np.max(np.abs(a[n].astype(np.float64) -
                                 b[n].astype(np.float64)))) for n in a)


def compare(params, model_fn, input_fn, steps, work_dir):
  """Runs both runners from one checkpoint; rows (step, le, lt, dl, dw)."""
  params = dict(params, mode='train', train_steps=steps,
                iterations_per_loop=1, save_checkpoints_steps=10**9,
                init_checkpoint=None)
  init_dir = os.path.join(work_dir, 'init')
  _initial_checkpoint(params, model_fn, input_fn, init_dir)
  runs = {}
  for kind, run in (('estimator', _run_estimator), ('tf2', _run_tf2)):
    model_dir = os.path.join(work_dir, kind)
    shutil.copytree(init_dir, model_dir)
    runs[kind] = run(dict(params, model_dir=model_dir), model_fn, input_fn,
                     steps)
  (est_losses, est_weights), (tf2_losses, tf2_weights) = (
      runs['estimator'], runs['tf2'])
  if len(est_losses) != steps or len(tf2_losses) != steps:
    raise RuntimeError(f'Expected {steps} steps, got {len(est_losses)} '
                       f'(estimator) and {len(tf2_losses)} (tf2).')
  return [(i + 1, le, lt, abs(le - lt), max_weight_diff(we, wt))
          for i, (le, lt, we, wt) in enumerate(
              zip(est_losses, tf2_losses, est_weights, tf2_weights))]


def format_table(rows, tolerance):
  """The per-step table and the closing maxima line."""
  lines = [f'{"step":>5} {"estimator loss":>15} {"tf2 loss":>15} '
           f'{"|dloss|":>10} {"max |dw|":>10}']
  for step, le, lt, dl, dw in rows:
    lines.append(f'{step:5d} {le:15.8f} {lt:15.8f} {dl:10.3e} {dw:10.3e}')
  max_dl = max(r[3] for r in rows)
  max_dw = max(r[4] for r in rows)
  verdict = 'OK' if max_dl <= tolerance else 'FAIL'
  lines.append(f'max |dloss|: {max_dl:.3e} (tolerance {tolerance:.0e}) | '
               f'max |dw|: {max_dw:.3e} | {verdict}')
  return '\n'.join(lines)


def plot(rows, path, title):
  """Writes a PNG of both loss curves."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  steps = [r[0] for r in rows]
  figure, axes = pyplot.subplots(figsize=(6, 4))
  axes.plot(steps, [r[1] for r in rows], 'o-', label='estimator')
  axes.plot(steps, [r[2] for r in rows], 'x--', label='tf2 runner')
  axes.set_xlabel('step')
  axes.set_ylabel('training loss')
  axes.set_title(title)
  axes.legend()
  figure.tight_layout()
  figure.savefig(path)
  pyplot.close(figure)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  if not estimator_compat.has_estimator():
    raise app.UsageError(f'TensorFlow {tf.__version__} has no tf.estimator: '
                         'run the tool on the legacy lane (TF 2.15).')
  try:
    params = params_lib.params_from_flags(FLAGS)
    strategy_lib.split_cpu(params['num_cpu_devices'])  # Before TF starts.
    model_fn = registry.resolve_model_fn(params['model'])
    input_fn = registry.resolve_input_fn(params['input'])
  except ValueError as e:
    raise app.UsageError(str(e)) from e
  work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix='verify-migration-')
  params = params_lib.with_model_dir(params, work_dir)
  tolerance = (FLAGS.tolerance if FLAGS.tolerance is not None
               else default_tolerance(params))
  rows = compare(params, model_fn, input_fn, FLAGS.steps, work_dir)
  print(format_table(rows, tolerance))
  path = FLAGS.plot or os.path.join(work_dir, 'losses.png')
  plot(rows, path, f'{params["model"]} {params["precision"]}, '
       f'{params.get("num_cpu_devices", 1)} replica(s)')
  print(f'plot: {path}')
  if max(r[3] for r in rows) > tolerance:
    logging.error('max |dloss| exceeds the tolerance %g.', tolerance)
    sys.exit(1)


if __name__ == '__main__':
  define_flags()
  app.run(main)
