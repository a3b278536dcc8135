"""One progress-line format for every runner, and the Estimator hook using it.

  train | step: 400 | steps/sec: 312.5 | examples/sec: 40000 | loss: 0.1234 | eta: 0:00:08
  eval | step: 400 | top_1_accuracy: 0.9861 | loss: 0.0467
"""

import datetime
import time

from absl import logging
import tensorflow as tf


def _format_value(value):
  if isinstance(value, float):
    if abs(value) >= 100:
      return f'{value:.1f}'
    return f'{value:.4f}' if abs(value) >= 1e-3 or value == 0 else (
        f'{value:.3e}')
  return str(value)


def format_line(kind, step, values):
  """'kind | step: N | key: value | ...' with values in the given order."""
  parts = [kind, f'step: {step}']
  parts += [f'{k}: {_format_value(v)}' for k, v in values.items()]
  return ' | '.join(parts)


def train_values(steps, seconds, global_batch, loss, remaining_steps):
  """The dict of a train progress line for `steps` done in `seconds`."""
  rate = steps / seconds if seconds > 0 else float('inf')
  eta = datetime.timedelta(seconds=round(remaining_steps / rate)) if (
      rate > 0 and rate != float('inf')) else '?'
  return {'steps/sec': rate, 'examples/sec': rate * global_batch,
          'loss': float(loss), 'eta': str(eta)}


class ProgressHook(tf.compat.v1.train.SessionRunHook):
  """Logs one train line per loop of at least `every_n_steps` steps.

  Reads the loss the Estimator puts in the LOSSES collection; on TPU each
  session.run is a whole loop of iterations_per_loop steps.
  """

  def __init__(self, every_n_steps, global_batch, train_steps):
    self._every = every_n_steps
    self._global_batch = global_batch
    self._train_steps = train_steps
    self._last_step = None
    self._last_time = None

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()
    losses = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.LOSSES)
    if not losses:
      raise RuntimeError('ProgressHook: no loss in the LOSSES collection.')
    self._loss = losses[-1]

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    loss = run_values.results
    step = run_context.session.run(self._global_step)
    now = time.monotonic()
    if self._last_step is None:
      self._last_step, self._last_time = step, now
      return
    if step - self._last_step >= self._every or step >= self._train_steps:
      values = train_values(step - self._last_step, now - self._last_time,
                            self._global_batch, loss, self._train_steps - step)
      logging.info('%s', format_line('train', step, values))
      self._last_step, self._last_time = step, now
