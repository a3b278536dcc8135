"""Stops training on a NaN or Inf loss, naming the step, before it is saved.

The loop policy (trainer/runtime/loop.py) checks the losses after every loop and
the variables before every checkpoint, so the latest checkpoint stays the last
good one.
"""

import math

import numpy as np
import tensorflow as tf

from trainer.api import errors


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
