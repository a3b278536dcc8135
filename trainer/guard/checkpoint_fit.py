"""Refuses to restore a checkpoint that does not fit the model, before any
step.

A TF1 Saver restores resource variables without checking their shapes: a
model changed since the checkpoint was written (other layer sizes, another
vocabulary) gets the old tensors and trains on with them, silently. Before
every restore each runner calls `check` with the model's variables,
{checkpoint key: (shape, dtype)}, and the checkpoint's path (or
`check_saver` with the Saver about to restore). It reads the checkpoint's
index only (tf.train.load_checkpoint: names, shapes and dtypes, no tensor)
and raises CheckpointMismatchError naming every variable whose shape or
dtype differs, with both, and every variable the checkpoint lacks (on
which Saver.restore would fail with NotFoundError); the checkpoint's other
variables are fine, as for Saver.restore. What is restored, and every
result where the model fits, is unchanged: the check only reads.

Compared as the Saver compares: a partitioned variable by its full shape
(its parts are slices of one checkpoint tensor); a bfloat16_scope variable
by the float32 it is stored as (the variable is float32, the bfloat16 cast
is a read); an optimizer slot as any variable, listed under the variable
it belongs to when both differ alike; a Saver(reshape=True) accepts
another shape of as many elements; an object-based checkpoint through the
names its object graph records, as Saver.restore reads one. A checkpoint
that cannot be read is left to the restore, whose error it was before.
"""

import collections
import math

from absl import logging
import tensorflow as tf

from trainer.api import errors
from trainer.compat import saver_variables

_MAX_LISTED = 40  # Lines of variables the checkpoint lacks, at most.
# An object-based checkpoint's keys end so; the object path names them.
_OBJECT_SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'


class CheckpointMismatchError(errors.TrainerError, ValueError):
  """A checkpoint about to be restored does not fit the model."""

  def __init__(self, message, checkpoint_path, mismatched, missing):
    super().__init__(message)
    self.checkpoint_path = checkpoint_path
    self.mismatched = mismatched  # [(key, checkpoint (shape, dtype), model)]
    self.missing = missing  # [key]


def _describe(shape, dtype):
  shape_text = '[?]' if shape is None else (
      '[' + ', '.join('?' if d is None else str(d) for d in shape) + ']')
  return f'{shape_text} {tf.as_dtype(dtype).name}'


def _shape_fits(stored, model, reshape):
  if model is None:  # Unknown rank: the restore decides.
    return True
  if reshape and None not in model:
    return math.prod(stored) == math.prod(model)
  return len(stored) == len(model) and all(
      m is None or m == s for s, m in zip(stored, model))


def _checkpoint_map(checkpoint_path):
  """({key: shape}, {key: dtype}, object-graph names or None), or None when
  the checkpoint cannot be read."""
  try:
    reader = tf.train.load_checkpoint(checkpoint_path)
    return (reader.get_variable_to_shape_map(),
            reader.get_variable_to_dtype_map(),
            saver_variables.object_graph_names(reader))
  except (tf.errors.OpError, ValueError) as e:
    logging.warning('Cannot read %s to check it fits the model (%s); the '
                    'restore will say what is wrong.', checkpoint_path, e)
    return None


def _shown(key):
  return key.removesuffix(_OBJECT_SUFFIX)


def _fold_slots(mismatched):
  """[(key, stored, model, [slot keys])]: a mismatched key that holds
  another's name as whole path components (its optimizer slot: x/Momentum,
  training/Adagrad/x/accumulator) and differs alike joins that one."""
  by_key = {key: (stored, model) for key, stored, model in mismatched}
  slots = collections.defaultdict(list)
  folded = set()
  for key, stored, model in mismatched:
    owners = [other for other in by_key
              if other != key and f'/{other}/' in f'/{key}'
              and by_key[other] == (stored, model)]
    if owners:
      slots[max(owners, key=len)].append(key)
      folded.add(key)
  return [(key, stored, model, slots[key]) for key, stored, model in
          mismatched if key not in folded]


def _message(checkpoint_path, mismatched, missing, model_size):
  rows = _fold_slots(mismatched)
  lines = []
  for key, stored, model, slots in rows:
    line = (f'  {_shown(key)}: {_describe(*stored)} in the checkpoint, '
            f'{_describe(*model)} in the model')
    if slots:
      line += (f' (and its optimizer slot{"s" if len(slots) > 1 else ""} '
               f'{", ".join(_shown(k) for k in slots)})')
    lines.append(line)
  for key in missing[:_MAX_LISTED]:
    lines.append(f'  {_shown(key)}: not in the checkpoint')
  if len(missing) > _MAX_LISTED:
    lines.append(f'  ... and {len(missing) - _MAX_LISTED} more not in the '
                 'checkpoint')
  if rows:
    key, stored, model, _ = rows[0]
    first = (f'{_shown(key)} is {_describe(*stored)} there and '
             f'{_describe(*model)} in the model')
    others = len(rows) - 1 + len(missing)
  elif len(missing) == model_size:
    first = (f'none of the model\'s {model_size} variables is in it (e.g. '
             f'{_shown(missing[0])}): it holds another model')
    others = 0
  else:
    first = f'{_shown(missing[0])} is not in it'
    others = len(missing) - 1
  if others:
    first += f', and {others} more variable{"s" if others > 1 else ""} ' \
             'differ (listed below)'
  return (
      f'checkpoint {checkpoint_path} does not fit the model: {first}. '
      'Nothing was restored. To train this model, use a new model_dir; to '
      'start it from these weights where they fit, warm-start from this '
      'checkpoint (in an Estimator program: warm_start_from='
      f"tf.estimator.WarmStartSettings('{checkpoint_path}', "
      'vars_to_warm_start=[...the variables that fit]); with trainer.main: '
      f'--init_checkpoint={checkpoint_path}, when every model variable '
      'fits, e.g. after a change of optimizer).\n' + '\n'.join(lines))


def check(model_variables, checkpoint_path, reshape=False):
  """Raises CheckpointMismatchError unless checkpoint_path restores into
  model_variables, {checkpoint key: (shape, dtype)} (shape: a sequence,
  None for an unknown dimension, or None); `reshape`: as Saver(reshape=).
  See the module docstring."""
  if not checkpoint_path or not model_variables:
    return
  found = _checkpoint_map(checkpoint_path)
  if found is None:
    return
  shapes, dtypes, object_names = found
  mismatched, missing = [], []
  for key, (shape, dtype) in sorted(model_variables.items()):
    stored_key = key
    if stored_key not in shapes and object_names:
      stored_key = object_names.get(key, key)
    if stored_key not in shapes:
      missing.append(key)
      continue
    model_shape = None if shape is None else tuple(shape)
    stored = (tuple(shapes[stored_key]), tf.as_dtype(dtypes[stored_key]))
    dtype = tf.as_dtype(dtype).base_dtype
    if dtype != stored[1] or not _shape_fits(stored[0], model_shape, reshape):
      mismatched.append((key, stored, (model_shape, dtype)))
  if mismatched or missing:
    raise CheckpointMismatchError(
        _message(checkpoint_path, mismatched, missing, len(model_variables)),
        checkpoint_path, mismatched, missing)


def check_var_list(var_list, checkpoint_path, reshape=False):
  """check() of a Saver's var_list: variables (partitioned ones, whole or
  as parts) in a list, or {checkpoint key: variable} (TF1 or eager)."""
  if checkpoint_path:
    check(saver_variables.var_list_variables(var_list), checkpoint_path,
          reshape=reshape)


def check_saver(saver, checkpoint_path):
  """check() of what `saver` (a tf.compat.v1 Saver; None: the one a
  Scaffold of the default graph restores through) restores from
  checkpoint_path, before it does."""
  if not checkpoint_path:
    return
  saver = saver_variables.graph_saver(saver)
  check(saver_variables.restored_variables(saver), checkpoint_path,
        reshape=saver_variables.reshapes(saver))


def checking_restores():
  """A block inside which every tf.compat.v1 Saver.restore is checked
  first (check_saver): for the real Estimator, whose restores happen in
  TensorFlow's own code."""
  return saver_variables.checking_restores(check_saver)


def install_restore_check():
  """checking_restores() for the rest of the process: for a program run on
  the real Estimator (trainer.legacy on TF <= 2.15). Idempotent."""
  saver_variables.install_restore_check(check_saver)

