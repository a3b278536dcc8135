r"""Proves two runners train the same, step by step, from the same weights.

  python -m trainer.verify_migration --runners=estimator,tf2 --model=mlp
  python -m trainer.verify_migration --runners=tf2,native --model=resnet \
      --resnet_depth=18 --precision=bfloat16 --num_cpu_devices=2

--runners=A,B with A, B among estimator (TF <= 2.15 only), tf2 and native (the
built-in models only). The model is built once under the tf2 runner and saved as
a TF1 checkpoint; the estimator and tf2 runs start from it, the native run from
its conversion (trainer/runners/native/convert.py). Each runner then trains
--steps steps on the same batches. The tool prints a per-step table (both
losses, |delta loss|, max |delta weight|), a last line with the maxima and the
verdict, writes a PNG of both loss curves, and exits 1 on FAIL.

What is compared: the loss of every step, and after every step the model's
variables by TF1 name: the trainable ones and the batch-norm moving
statistics. The verdict judges the losses and the moving statistics, which
the loss does not see (a skipped UPDATE_OPS shows only there). Trainable
weights act on the next step's loss, which is judged; their own max |dw| is
printed but not judged, because Adam divides each update by the root of the
squared-gradient average: a gradient that is a small difference of large
terms (a batch-norm beta in a deep block, say) carries a large relative
rounding error that Adam turns into an update error of up to lr, whatever
the precision (ResNet-18, tf2 vs native: 3.1e-5 on one beta after 3 steps
with identical losses to 5e-7). Optimizer slots are not compared (the native
optimizer keeps other ones, and they act through the weights).

Tolerances, derived rather than tuned (k = --steps):

  float32. eps = 2^-23 is float32's machine epsilon. Two runners that
  compute the same math round differently where they order it differently:
  reductions (matmul, convolution and batch-norm sums; the all-reduce over
  replicas), XLA fusion, Keras layers vs get_variable code. We allow a
  growth factor G = 8 eps of relative difference per step (forward, backward
  and update each reordered, with room to spare), accumulating linearly
  over the k steps: r = G * k * eps (20 steps: 1.9e-5; 3 steps: 2.9e-6).
  The loss tolerance is r times the loss scale S = max |loss| of the first
  runner. Measured
  differences sit below this: bit-identical (MLP, no XLA), 5e-7 (XLA),
  2.4e-7 (2-8 replicas), 2.6e-6 (ResNet-18 over 20 steps: bound 4.4e-5),
  3.1e-6 (MLP, tf2 vs native, 20 steps: bound 4.7e-5).

  bfloat16. bfloat16 keeps 8 significant bits: its unit roundoff is 2^-8
  (relative spacing 2^-7). Variables and the loss stay float32; what differs
  is where and how each side rounds activations to bfloat16 (oneDNN's
  native bf16 kernels, XLA:CPU's f32 matmuls, fused or not). Each side's
  loss then carries up to 2^-8 relative error from that rounding, and the
  two sides round independently: r = 2 * 2^-8 = 2^-7, times the loss scale
  S. It does not grow with k: the weights stay float32 and drift only by
  the rounding of their updates, second order over a few dozen steps. (The
  built-in MLP measured 1e-3 on one CPU and 6.9e-3 on an AMD EPYC over 20
  steps, loss ~2.3: bound 1.8e-2.)

  Moving statistics (batch norm) are judged as updates, not to a rounding
  bound: they average activations of the trainable weights, whose drift
  Adam amplifies beyond any eps bound (above), so their difference carries
  that drift (ResNet-18 f32, 3 steps: 8e-6 on one CPU, 1.45x a 2 r bound
  that held on another). Each side's movement from step 0, da and db, must
  agree to half of it: |da - db| <= max|da| / 2 per variable. Rounding
  drift stays orders of magnitude inside; a skipped update (db = 0) is
  exactly 2, another momentum (0.9 vs 0.99) about 18.

  --tolerance overrides the loss tolerance (not the statistics' check).

A bug fails the check by far: a wrong loss scaling moves the loss of step 1
by the loss itself; a dropped gradient leaves a whole variable behind by up
to lr per element and step, which moves the next losses; a skipped
UPDATE_OPS leaves the moving statistics at their initial values
(tests/main/verify_migration_test.py injects each).

Batch statistics over several replicas: the one-device estimator normalises
batch norm over the global batch, each tf2 / native replica over its
share, so with --num_cpu_devices > 1 they differ by construction. The tool
says so and exits 2 without comparing; tf2,native (both per replica) are
compared. --augmentation defaults to none here (ResNet-18 with pad_crop
measured 3.1e-6, XLA on one side only).
"""

import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup

if __name__ == '__main__':  # Before TensorFlow's first import.
  startup.prepare(sys.argv)

from absl import app
from absl import flags

import flags as trainer_flags
from trainer import user_flags
from trainer.runners import registry as runners

FLAGS = flags.FLAGS


def define_flags(argv=None):
  """The trainer's flags (beside those of the model modules argv names,
  trainer/user_flags.py) plus this tool's; --augmentation defaults to none."""
  user_flags.define_all(sys.argv if argv is None else argv,
                        trainer_flags.define_flags)
  runners.add_flag_validator()
  FLAGS.set_default('augmentation', 'none')
  flags.DEFINE_list('runners', None,
                    'The two runners compared, A,B among estimator, tf2, '
                    'native. Default: estimator,tf2 where TensorFlow has '
                    'Estimator, tf2,native otherwise.')
  flags.DEFINE_integer('steps', 20, 'Training steps compared.', lower_bound=1)
  flags.DEFINE_string('plot', None,
                      'PNG of both loss curves. Default: WORK_DIR/losses.png.')
  flags.DEFINE_string('work_dir', None,
                      'Checkpoints of both runs, kept. Default: a new temp '
                      'dir, whose checkpoints are deleted at the end (the '
                      'plot stays).')
  flags.DEFINE_float('tolerance', None,
                     'Max |delta loss| allowed. Default: derived from the '
                     'precision, the steps and the loss scale (see the '
                     'module docstring).', lower_bound=0.0)


if __name__ == '__main__':  # --help and flag errors before TensorFlow.
  # Model modules the flags name may name tf.estimator (TF >= 2.16).
  if user_flags.names_modules(sys.argv):
    from trainer.facade import install as early_facade  # pylint: disable=g-import-not-at-top
    early_facade.install()
  define_flags()
  _PARSED = startup.parse_flags_first(
      sys.argv, 'python -m trainer.verify_migration', __doc__, FLAGS)

# pylint: disable=g-import-not-at-top,wrong-import-position
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from trainer import config as config_lib
from trainer import params as params_lib
from trainer.api import errors
from trainer.api import estimator_names as estimator_compat
from trainer.facade import install as facade
from trainer.models import registry
from trainer.runtime import strategy as strategy_lib
# pylint: enable=g-import-not-at-top,wrong-import-position

FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2^-23
GROWTH_PER_STEP = 8  # float32: eps of relative difference allowed per step.
BFLOAT16_ROUNDOFF = 2.0 ** -8  # bfloat16 keeps 8 significant bits.
NOT_COMPARABLE_STATUS = 2


class NotComparableError(errors.TrainerError, ValueError):
  """The two runners compute different math by construction."""


def default_runners():
  return 'estimator,tf2' if estimator_compat.has_estimator() else 'tf2,native'


def relative_tolerance(precision, steps):
  """r of the module docstring: 8 * steps * eps (float32) or 2^-7."""
  if precision == 'bfloat16':
    return 2 * BFLOAT16_ROUNDOFF
  return GROWTH_PER_STEP * steps * FLOAT32_EPS


def loss_tolerance(precision, steps, losses):
  """r times the loss scale, max |loss| over `losses` (the first runner's)."""
  scale = float(np.max(np.abs(np.asarray(losses, dtype=np.float64))))
  return relative_tolerance(precision, steps) * scale


def parse_runners(value):
  """(A, B) from ['A', 'B']; ValueError naming --runners otherwise."""
  names = [v.strip() for v in (value or default_runners().split(','))]
  if len(names) != 2 or any(n not in runners.RUNNERS for n in names):
    raise ValueError(f'--runners={",".join(names)}: give two of '
                     f'{", ".join(runners.names())}, e.g. '
                     '--runners=tf2,native.')
  if names[0] == names[1]:
    raise ValueError(f'--runners={",".join(names)}: name two different '
                     'runners.')
  for name in names:
    if runners.get(name).needs_estimator and (
        not estimator_compat.has_estimator()):
      raise ValueError(f'--runners={name}: TensorFlow {tf.__version__} has '
                       'no tf.estimator (removed in 2.16); compare '
                       'tf2,native.')
  return tuple(names)


def _is_state(name):
  """Batch-norm moving statistics: compared, though not trainable."""
  return name.rsplit('/', 1)[-1].startswith('moving_')


def _compared(name, variable):
  """Whether a variable is compared: trainable, or batch-norm state."""
  return variable.trainable or _is_state(name)


def _run(params, model_fn, input_fn, steps, init_dir, strategy):
  """Trains params['runner'] `steps` steps from the TF1 checkpoint in
  init_dir (converted first for an object-based runner); its losses and,
  after each step, the compared variables by TF1 name."""
  if runners.get(params['runner']).object_checkpoints:
    # pylint: disable=g-import-not-at-top  (Keras 2, Orbit: only when asked)
    from trainer.runners.native import convert
    convert.convert(init_dir, params, params['model_dir'])
  else:
    shutil.copytree(init_dir, params['model_dir'])
  runner = runners.make_runner(config_lib.from_params(params), model_fn,
                               input_fn, strategy=strategy)
  return runner.observe_training(steps, _compared)


def _initial_checkpoint(params, model_fn, input_fn, directory, strategy):
  """Builds the model once under the tf2 runner and saves step 0 in
  `directory`; the TF1 names of its variables."""
  runner = runners.make_runner(
      config_lib.from_params(params_lib.replaced(params, runner='tf2',
                                                 model_dir=directory)),
      model_fn, input_fn, strategy=strategy)
  runner.train_steps(0)
  runner.save_checkpoint()
  return set(runner.module.variables_by_name())


def check_comparable(names, runner_pair, params):
  """NotComparableError, in plain words, where batch statistics differ by
  construction: one-device estimator vs several replicas."""
  replicas = params['num_cpu_devices']
  stats = sorted(n for n in names if _is_state(n))
  if 'estimator' in runner_pair and replicas > 1 and stats:
    other = [r for r in runner_pair if r != 'estimator'][0]
    raise NotComparableError(
        f'Not comparable: the model has batch normalisation ({stats[0]}, '
        f'...). With --num_cpu_devices={replicas} each {other} replica '
        'normalises over its share of the batch, while the one-device '
        'estimator normalises over the global batch, so their losses differ '
        'by construction, not by a bug. Compare with --num_cpu_devices=1, '
        f'or compare --runners=tf2,native (both per replica).')


def _max_diff(a, b, names):
  return max(float(np.max(np.abs(a[n].astype(np.float64) -
                                 b[n].astype(np.float64)))) for n in names)


def weight_excess(a, b, initial, judged):
  """(max over the moving statistics `judged` of |da - db| / (max|da| / 2),
  where da, db are each side's movement from `initial`; that variable's
  name). Above 1: the two sides did not update the statistic alike."""
  worst = (0.0, None)
  for n in judged:
    start = initial[n].astype(np.float64)
    da = a[n].astype(np.float64) - start
    db = b[n].astype(np.float64) - start
    moved = float(np.max(np.abs(da)))
    apart = float(np.max(np.abs(da - db)))
    excess = 0.0 if apart == 0.0 else (
        apart / (moved / 2) if moved else float('inf'))
    if excess >= worst[0]:
      worst = (excess, n)
  return worst


def compare(params, model_fn, input_fn, steps, work_dir,
            runner_pair=('estimator', 'tf2')):
  """Runs both runners from one checkpoint; a Comparison."""
  params = params_lib.replaced(
      params, mode='train', train_steps=steps, iterations_per_loop=1,
      save_checkpoints_steps=10**9, init_checkpoint=None)
  init_dir = os.path.join(work_dir, 'init')
  # One strategy for every run in this process: two MirroredStrategy
  # instances would reuse each other's collective keys.
  strategy = strategy_lib.make_strategy(
      config_lib.from_params(params).cluster)
  names = _initial_checkpoint(params, model_fn, input_fn, init_dir, strategy)
  check_comparable(names, runner_pair, params)
  results = []
  for kind in runner_pair:
    run_params = params_lib.replaced(
        params, runner=kind, model_dir=os.path.join(work_dir, kind))
    results.append(_run(run_params, model_fn, input_fn, steps, init_dir,
                        strategy))
  reader = tf.train.load_checkpoint(init_dir)
  initial = {n: reader.get_tensor(n) for n in names if _is_state(n)}
  return Comparison(runner_pair, results, params['precision'], steps,
                    initial)


class Comparison:
  """Both runs' losses and variables, the tolerances and the verdict."""

  def __init__(self, runner_pair, results, precision, steps, initial):
    """initial: the moving statistics at step 0, by name."""
    (self.losses_a, weights_a), (self.losses_b, weights_b) = results
    self.runners = runner_pair
    for kind, losses in zip(runner_pair, (self.losses_a, self.losses_b)):
      if len(losses) != steps:
        raise RuntimeError(f'Expected {steps} steps, got {len(losses)} '
                           f'({kind}).')
    a_names, b_names = set(weights_a[0]), set(weights_b[0])
    if a_names != b_names:
      raise ValueError(
          f'The runners made different variables: only {runner_pair[0]} '
          f'{sorted(a_names - b_names)[:5]}, only {runner_pair[1]} '
          f'{sorted(b_names - a_names)[:5]}.')
    self.relative = relative_tolerance(precision, steps)
    self.loss_tolerance = loss_tolerance(precision, steps, self.losses_a)
    judged = sorted(n for n in a_names if _is_state(n))
    self.rows = []
    self.weight_excess, self.worst_variable = 0.0, None
    for i, (la, lb, wa, wb) in enumerate(zip(self.losses_a, self.losses_b,
                                             weights_a, weights_b)):
      self.rows.append((i + 1, la, lb, abs(la - lb),
                        _max_diff(wa, wb, sorted(a_names))))
      if judged:
        excess, name = weight_excess(wa, wb, initial, judged)
        if excess >= self.weight_excess:
          self.weight_excess, self.worst_variable = excess, name

  @property
  def max_dloss(self):
    return max(r[3] for r in self.rows)

  def ok(self, loss_tolerance=None):
    """Within the loss tolerance (default: derived) and the variables'."""
    tolerance = (self.loss_tolerance if loss_tolerance is None
                 else loss_tolerance)
    return self.max_dloss <= tolerance and self.weight_excess <= 1.0

  def format(self, loss_tolerance=None):
    """The per-step table and the closing maxima line."""
    tolerance = (self.loss_tolerance if loss_tolerance is None
                 else loss_tolerance)
    a, b = self.runners
    lines = [f'{"step":>5} {a + " loss":>15} {b + " loss":>15} '
             f'{"|dloss|":>10} {"max |dw|":>10}']
    for step, la, lb, dl, dw in self.rows:
      lines.append(f'{step:5d} {la:15.8f} {lb:15.8f} {dl:10.3e} {dw:10.3e}')
    max_dw = max(r[4] for r in self.rows)
    verdict = 'OK' if self.ok(loss_tolerance) else 'FAIL'
    stats = (f'moving statistics apart by {self.weight_excess:.3g} of '
             f'half their movement, worst {self.worst_variable}'
             if self.worst_variable else 'no moving statistics')
    lines.append(f'max |dloss|: {self.max_dloss:.3e} (tolerance '
                 f'{tolerance:.3e}) | max |dw|: {max_dw:.3e} ({stats}) | '
                 f'{verdict}')
    return '\n'.join(lines)


def plot(comparison, path, title):
  """Writes a PNG of both loss curves."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  steps = [r[0] for r in comparison.rows]
  figure, axes = pyplot.subplots(figsize=(6, 4))
  a, b = comparison.runners
  axes.plot(steps, comparison.losses_a, 'o-', label=f'{a} runner')
  axes.plot(steps, comparison.losses_b, 'x--', label=f'{b} runner')
  axes.set_xlabel('step')
  axes.set_ylabel('training loss')
  axes.set_title(title)
  axes.legend()
  figure.tight_layout()
  figure.savefig(path)
  pyplot.close(figure)


def _delete_all_but(directory, keep):
  """Deletes what `directory` holds, but the file `keep` in it."""
  for name in os.listdir(directory):
    entry = os.path.join(directory, name)
    if os.path.abspath(entry) == os.path.abspath(keep):
      continue
    if os.path.isdir(entry) and not os.path.islink(entry):
      shutil.rmtree(entry, ignore_errors=True)
    else:
      os.remove(entry)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  try:
    runner_pair = parse_runners(FLAGS.runners)
    config = params_lib.config_from_flags(FLAGS)
    params = config.as_params()
    for name in runner_pair:  # Each runner's own rules (native's, say).
      params_lib.validate_params(config.replace(runner=name))
    strategy_lib.split_cpu(params['num_cpu_devices'])  # Before TF starts.
    model_fn = registry.resolve_model_fn(params['model'])
    input_fn = registry.resolve_input_fn(params['input'])
  except ValueError as e:
    raise app.UsageError(str(e)) from e
  work_dir = FLAGS.work_dir or tempfile.mkdtemp(prefix='verify-migration-')
  params = params_lib.with_model_dir(config, work_dir).as_params()
  path = FLAGS.plot or os.path.join(work_dir, 'losses.png')
  try:
    comparison = compare(params, model_fn, input_fn, FLAGS.steps, work_dir,
                         runner_pair)
  except NotComparableError as e:
    print(str(e), file=sys.stderr)
    sys.exit(NOT_COMPARABLE_STATUS)
  finally:
    if not FLAGS.work_dir:  # Hundreds of MB of checkpoints nobody asked for.
      _delete_all_but(work_dir, path)
  print(comparison.format(FLAGS.tolerance))
  plot(comparison, path, f'{params["model"]} {params["precision"]}, '
       f'{params["num_cpu_devices"]} replica(s)')
  print(f'plot: {path}')
  if not comparison.ok(FLAGS.tolerance):
    print('FAIL: the runners differ beyond the tolerance (see the module '
          'docstring of trainer/verify_migration.py).', file=sys.stderr)
    sys.exit(1)


if __name__ == '__main__':
  facade.install()  # Before model modules name tf.estimator (TF >= 2.16).
  app.run(main, flags_parser=_PARSED)
