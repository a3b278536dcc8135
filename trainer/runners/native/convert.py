r"""Converts a TF1 name-based checkpoint into a native object-based one.

  python -m trainer.runners.native.convert --checkpoint=MODEL_DIR_or_PREFIX \
      --model=mlp|resnet [the model's flags, or --flagfile] --output=DIR

Reads model.ckpt-N of either TF1 runner (estimator or tf2) and writes
DIR/ckpt-N, the checkpoint the native runner resumes from: the model's
weights and batch-norm statistics, the optimizer's slots (Adam m and v,
the momentum accumulator) and the step (global_step -> the optimizer's
iterations). TF1 Adam's beta1_power / beta2_power are not copied: the native
Adam computes them from the step, so they are checked against it instead.

Every TF1 variable must be used exactly once and every native variable
filled exactly once; otherwise ConversionError lists the variables (unused,
missing, other shape) and nothing is written. The checkpoint is written
into a scratch directory, read back and compared, then moved into DIR with
the `checkpoint` state file last, so DIR never shows a partial checkpoint.
Model flags are the trainer's (flags.py): --model, --num_classes,
--image_size, --image_channels, --mlp_hidden_units, --resnet_depth,
--resnet_stem, --optimizer, and the learning-rate flags.
"""

import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup

if __name__ == '__main__':  # Before TensorFlow's first import.
  startup.prepare(sys.argv)

from absl import app
from absl import flags

FLAGS = flags.FLAGS


def define_flags():
  """--checkpoint and --output, plus the trainer's flags (model flags)."""
  import flags as trainer_flags  # pylint: disable=g-import-not-at-top
  from trainer.runners import registry as runners  # pylint: disable=g-import-not-at-top
  trainer_flags.define_flags()
  runners.add_flag_validator()
  flags.DEFINE_string('checkpoint', None,
                      'TF1 checkpoint: a model_dir (its latest) or a prefix.')
  flags.DEFINE_string('output', None,
                      'New directory for the object-based checkpoint.')
  flags.mark_flags_as_required(['checkpoint', 'output'])


if __name__ == '__main__':  # --help and flag errors before TensorFlow.
  define_flags()
  _PARSED = startup.parse_flags_first(
      sys.argv, 'python -m trainer.runners.native.convert', __doc__, FLAGS)

# pylint: disable=g-import-not-at-top,wrong-import-position
import dataclasses
import json
import os

from absl import logging
import numpy as np

from model_fn.native import optimization
import tensorflow as tf
from trainer import params as params_lib
from trainer.api import errors
from trainer.models import builtin
from trainer.compat import tf_private
from trainer.runtime import checkpoints
# pylint: enable=g-import-not-at-top,wrong-import-position
GLOBAL_STEP = 'global_step'
ADAM_POWERS = {'beta1_power': optimization.ADAM_BETA1,
               'beta2_power': optimization.ADAM_BETA2}
# Bias correction sqrt(1 - b2^t) / (1 - b1^t) of the next step from the TF1
# beta powers vs. from the step: relative tolerance (float32 running
# products drift by ~1e-7 per step; an off-by-one step differs by >= 1e-3).
ADAM_CORRECTION_RTOL = 1e-4
CONVERSION_FILE = 'conversion.json'
MODEL_KEYS = (('model', 'num_classes', 'image_size', 'image_channels') +
              builtin.hyperparameter_keys() + ('precision', 'optimizer',
              'momentum', 'learning_rate', 'lr_schedule', 'warmup_steps',
              'train_steps', 'lr_decay_steps', 'lr_decay_factor'))


class ConversionError(errors.TrainerError, ValueError):
  """The TF1 checkpoint and the native model do not match one to one."""


@dataclasses.dataclass(frozen=True)
class Row:
  """One line of the mapping: TF1 name -> native object path."""
  tf1_name: str
  object_path: str
  how: str  # 'copy', 'step', 'checked' or 'derived'
  note: str = ''  # e.g. which model variable a slot belongs to


def checkpoint_prefix(path):
  """The checkpoint prefix of `path`: itself, or a directory's latest."""
  if tf.io.gfile.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise ConversionError(f'--checkpoint: no checkpoint in directory '
                            f'{path}.')
    return latest
  if not tf.io.gfile.exists(path + '.index'):
    raise ConversionError(f'--checkpoint: {path} is neither a directory nor '
                          'a checkpoint prefix (no .index file).')
  return path


def native_state(params):
  """(model, optimizer, checkpoint root) of params, every variable made."""
  # Variables are float32 anyway.
  params = params_lib.replaced(params, precision='float32')
  model = builtin.build_native_model(params)
  optimizer = optimization.make_optimizer(params)
  optimizer.build(model.trainable_variables)
  return model, optimizer, checkpoints.make_checkpoint(model, optimizer)


def _adam_correction(beta1_power, beta2_power):
  return np.sqrt(1.0 - beta2_power) / (1.0 - beta1_power)


def _check_adam_powers(values, step):
  """Problems if TF1's beta powers disagree with the step's."""
  if not set(ADAM_POWERS) <= set(values):
    return []
  tf1 = _adam_correction(float(values['beta1_power']),
                         float(values['beta2_power']))
  native = _adam_correction(ADAM_POWERS['beta1_power'] ** (step + 1),
                            ADAM_POWERS['beta2_power'] ** (step + 1))
  if abs(tf1 - native) <= ADAM_CORRECTION_RTOL * abs(native):
    return []
  return [f'  beta1_power={float(values["beta1_power"]):.6g}, '
          f'beta2_power={float(values["beta2_power"]):.6g} are not Adam\'s '
          f'after global_step={step} steps (bias correction {tf1:.6g} vs '
          f'{native:.6g})']


def plan(values, model, optimizer, root):
  """[(Row, native variable or None, value)] filling every native variable.

  `values`: {TF1 name: numpy value} of the whole TF1 checkpoint. Raises
  ConversionError listing every unused TF1 variable, unfilled native
  variable and shape mismatch.
  """
  paths = checkpoints.object_paths(root)
  targets = {}  # TF1 name -> (native variable, how)
  notes = {}
  for name, variable in model.tf1_variables().items():
    targets[name] = (variable, 'copy')
    for suffix, slot in optimization.tf1_slots(optimizer, variable).items():
      targets[f'{name}/{suffix}'] = (slot, 'copy')
      notes[f'{name}/{suffix}'] = (f'{suffix} slot of '
                                   f'{paths.get(variable.ref(), "?")}')
  targets[GLOBAL_STEP] = (optimizer.iterations, 'step')
  derived = []
  if isinstance(optimizer, optimization.V1Adam):
    for name in ADAM_POWERS:
      targets[name] = (None, 'checked')
  learning_rate = tf_private.current_learning_rate(optimizer)
  if isinstance(learning_rate, tf.Variable):  # Recomputed every step.
    derived.append(learning_rate)

  problems = []
  unused = sorted(set(values) - set(targets))
  problems += [f'  unused TF1 variable {n} {list(np.shape(values[n]))}'
               for n in unused]
  missing = sorted(set(targets) - set(values))
  for name in missing:
    variable = targets[name][0]
    wanted = ('a check of the step' if variable is None else
              f'native {paths.get(variable.ref(), "?")} '
              f'{variable.shape.as_list()}')
    problems.append(f'  missing TF1 variable {name} (for {wanted})')
  filled = {}
  rows = []
  for name in sorted(set(targets) & set(values)):
    variable, how = targets[name]
    if variable is None:
      rows.append((Row(name, '(none: checked against global_step)', how),
                   None, values[name]))
      continue
    path = paths.get(variable.ref())
    if path is None:
      problems.append(f'  {name}: its native variable is not in the '
                      'checkpoint root')
      continue
    filled.setdefault(variable.ref(), []).append(name)
    if list(np.shape(values[name])) != variable.shape.as_list():
      problems.append(f'  {name}: TF1 {list(np.shape(values[name]))}, native '
                      f'{path} {variable.shape.as_list()}')
    rows.append((Row(name, path, how, notes.get(name, '')), variable,
                 values[name]))
  for variable in derived:
    path = paths.get(variable.ref())
    if path is not None:
      filled.setdefault(variable.ref(), []).append('(derived)')
      rows.append((Row('(learning rate at global_step)', path, 'derived'),
                    variable, None))
  for ref, path in sorted(paths.items(), key=lambda item: item[1]):
    names = filled.get(ref, [])
    if not names:
      problems.append(f'  native variable {path} '
                      f'{ref.deref().shape.as_list()} is filled by no TF1 '
                      'variable')
    elif len(names) > 1:
      problems.append(f'  native variable {path} is filled {len(names)} '
                      f'times: {", ".join(names)}')
  if GLOBAL_STEP in values:
    problems += _check_adam_powers(values, int(values[GLOBAL_STEP]))
  if problems:
    raise ConversionError(
        f'the TF1 checkpoint does not match the native {model.name} with '
        f'{type(optimizer).__name__} ({len(problems)} problem(s)):\n' +
        '\n'.join(problems))
  return rows


def _assign(rows, params):
  step = None
  for row, variable, value in rows:
    if row.how in ('copy', 'step'):
      variable.assign(np.asarray(value).astype(
          variable.dtype.base_dtype.as_numpy_dtype))
      if row.how == 'step':
        step = int(value)
  for row, variable, _ in rows:
    if row.how == 'derived':
      variable.assign(optimization.LearningRate(params)(step))
  return step


def _verify(path, rows):
  """Reads the written checkpoint back: every copied value must be there."""
  reader = tf.train.load_checkpoint(path)
  for row, _, value in rows:
    if row.how not in ('copy', 'step'):
      continue
    got = reader.get_tensor(f'{row.object_path}/.ATTRIBUTES/VARIABLE_VALUE')
    if not np.array_equal(got, np.asarray(value).astype(got.dtype)):
      raise ConversionError(f'read-back mismatch: {row.tf1_name} -> '
                            f'{row.object_path} in {path}')


def _publish(scratch, output):
  """Moves scratch's files into output, the `checkpoint` state file last."""
  tf.io.gfile.makedirs(output)
  names = sorted(tf.io.gfile.listdir(scratch), key=lambda n: n == 'checkpoint')
  for name in names:
    tf.io.gfile.rename(os.path.join(scratch, name),
                       os.path.join(output, name), overwrite=False)
  tf.io.gfile.rmtree(scratch)


def convert(checkpoint, params, output):
  """Converts TF1 `checkpoint` (prefix or directory) into OUTPUT/ckpt-STEP.

  params: the model keys of MODEL_KEYS. Returns (path written, rows).
  Raises ConversionError when the variables do not match one to one, when
  OUTPUT already holds a checkpoint, or when `checkpoint` is not a TF1 one.
  """
  source = checkpoint_prefix(checkpoint)
  if checkpoints.is_object_based(source):
    raise ConversionError(f'--checkpoint: {source} is already an '
                          'object-based checkpoint.')
  if tf.io.gfile.exists(os.path.join(output, 'checkpoint')) or (
      tf.train.latest_checkpoint(output)):
    raise ConversionError(f'--output: {output} already holds checkpoints; '
                          'convert into a new directory.')
  reader = tf.train.load_checkpoint(source)
  values = {name: reader.get_tensor(name)
            for name in reader.get_variable_to_shape_map()}
  model, optimizer, root = native_state(params)
  rows = plan(values, model, optimizer, root)
  step = _assign(rows, params)
  scratch = f'{output.rstrip("/")}.incomplete-{os.getpid()}'
  if tf.io.gfile.exists(scratch):
    tf.io.gfile.rmtree(scratch)
  try:
    manager = checkpoints.make_manager(root, scratch, max_to_keep=1)
    written = manager.save(checkpoint_number=step)
    _verify(written, rows)
    with tf.io.gfile.GFile(os.path.join(scratch, CONVERSION_FILE), 'w') as f:
      json.dump({'source': source, 'global_step': step,
                 'mapping': [dataclasses.asdict(r) for r, _, _ in rows]},
                f, indent=1)
    _publish(scratch, output)
  finally:
    if tf.io.gfile.exists(scratch):
      tf.io.gfile.rmtree(scratch)
  return os.path.join(output, os.path.basename(written)), [r for r, _, _ in
                                                           rows]


def format_rows(rows):
  """The mapping as aligned text lines: 'TF1 name -> object path (how)'."""
  width = max(len(r.tf1_name) for r in rows)
  lines = []
  for r in rows:
    extra = [r.how] if r.how != 'copy' else []
    extra += [r.note] if r.note else []
    lines.append(f'{r.tf1_name:<{width}} -> {r.object_path}' +
                 (f'  ({"; ".join(extra)})' if extra else ''))
  return lines


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  try:
    params = params_lib.params_from_flags(FLAGS)
    params_lib.check_native(params)
  except ValueError as e:
    raise app.UsageError(str(e)) from e
  try:
    path, rows = convert(FLAGS.checkpoint, params, FLAGS.output)
  except (ConversionError, ValueError) as e:
    logging.error('%s', e)
    raise SystemExit(f'error: {e}') from e
  for line in format_rows(rows):
    print(line)
  print(f'converted: {path}')
  return 0


if __name__ == '__main__':
  app.run(main, flags_parser=_PARSED)
