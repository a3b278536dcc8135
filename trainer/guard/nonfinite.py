"""Stops training on a NaN or Inf loss, naming the step, before it is saved.

The loop policy (trainer/runtime/loop.py) checks the losses after every loop and
the variables before every checkpoint, so the latest checkpoint stays the last
good one. `saved_after(model_dir, step)` tells, after Estimator's
NanTensorHook stopped a launcher program, which checkpoints were saved after
the failing step (Estimator saves before that hook stops it) and hold
non-finite values, and the newest one from before it.
"""

import math
import os

import numpy as np
import tensorflow as tf

from trainer.api import errors
from trainer.guard import checkpoint_files


class NonFiniteLossError(errors.TrainerError, RuntimeError):
  """The loss or the variables became NaN or Inf."""


def _latest(model_dir):
  path = tf.train.latest_checkpoint(model_dir)
  return (f'the latest checkpoint, {path}, is from before it'
          if path else 'no checkpoint was written')


def check_loss(loss, step, model_dir):
  """Raises NonFiniteLossError naming `step` if `loss` is NaN or Inf."""
  loss = float(np.asarray(loss, dtype=np.float64))
  if not math.isfinite(loss):
    raise NonFiniteLossError(
        f'Loss is {loss} at step {step}: training stopped and '
        f'{_latest(model_dir)}. Lower --learning_rate, add --warmup_steps or '
        'check the input.')


def check_variables(finite_by_name, step, model_dir):
  """Raises NonFiniteLossError if any variable is not finite at `step`.

  finite_by_name: {variable name: bool all-finite}.
  """
  bad = sorted(name for name, ok in finite_by_name.items() if not ok)
  if bad:
    raise NonFiniteLossError(
        f'Variables became NaN or Inf at step {step} ({", ".join(bad[:10])}'
        f'{" ..." if len(bad) > 10 else ""}): not saving them; '
        f'{_latest(model_dir)}.')


def check_losses(losses, last_step, model_dir):
  """check_loss on per-step `losses` of the steps ending at `last_step`."""
  losses = np.asarray(losses, dtype=np.float64).reshape(-1)
  bad = np.flatnonzero(~np.isfinite(losses))
  if bad.size:
    first = int(bad[0])
    check_loss(losses[first], last_step - losses.size + first + 1, model_dir)


def finite_by_name(arrays_by_name):
  """{name: all values finite} of the float arrays in {name: numpy value}."""
  return {name: bool(np.isfinite(value).all())
          for name, value in arrays_by_name.items()
          if np.issubdtype(np.asarray(value).dtype, np.floating)}


def check_arrays(arrays_by_name, step, model_dir):
  """check_variables on {name: numpy value}; non-float values are skipped."""
  check_variables(finite_by_name(arrays_by_name), step, model_dir)


def first_non_finite(path):
  """The first float variable of checkpoint `path` holding a NaN or Inf,
  or None (reads the variables one by one, stopping at it)."""
  reader = tf.train.load_checkpoint(path)
  for name, dtype in sorted(reader.get_variable_to_dtype_map().items()):
    if dtype.is_floating and not np.isfinite(reader.get_tensor(name)).all():
      return name
  return None


def saved_after(model_dir, step):
  """([(checkpoint, its first non-finite variable)] of model_dir's
  checkpoints saved after global step `step` that hold NaN or Inf, newest
  first; the newest checkpoint at or before `step`, or None)."""
  state = tf.train.get_checkpoint_state(model_dir)
  paths = list(state.all_model_checkpoint_paths) if state else []
  before = [p for p in paths
            if 0 <= checkpoint_files.step_of(os.path.basename(p)) <= step]
  bad = []
  for path in reversed(paths):
    if checkpoint_files.step_of(os.path.basename(path)) > step:
      name = first_non_finite(path)
      if name:
        bad.append((path, name))
  return bad, (before[-1] if before else None)
