"""How many steps fit in a time budget, from the loops run so far.

The loop policy sizes loops with it (--iterations_per_loop_secs), and the
facade gives it as
tensorflow_estimator.python.estimator.tpu.iteration_count_estimator, as
TF 2.15 behaves: `TPUConfig(iterations_per_loop='60s')` makes TPUEstimator
size each loop with one of these. The first loop runs one step; each loop's
(elapsed seconds, steps) is kept in a buffer of the last `capacity` loops;
the next count moves to budget / mean seconds per step, and stays put once
the loops take within 10% (the last) or 5% (the mean) of the budget and the
per-step time has settled (standard deviation under 0.03 s, more loops seen
than the buffer holds).
"""

import collections

import numpy as np
from absl import logging

RuntimeCounter = collections.namedtuple(
    'RuntimeCounter', ['runtime_secs', 'steps', 'step_time_secs'])

_MIN_ITERATIONS = 1


class IterationCountEstimator(object):
  """Steps per loop for a budget in seconds, learned from loop timings."""

  def __init__(self, capacity=20):
    self._reset(capacity=capacity)

  def _reset(self, capacity=20):
    if capacity <= 0:
      raise ValueError('IterationCountEstimator `capacity` must be positive. '
                       f'Actual:{capacity}.')
    self._capacity = capacity
    self._buffer_wheel = collections.deque([])
    self._min_iterations = _MIN_ITERATIONS
    self._last_iterations = self._min_iterations
    self._sample_count = 0

  def _statistic(self, reduce, field):
    """reduce() over the buffer's loops of one RuntimeCounter field (the
    buffer as a loops x fields array, reduced along loops); 0 when empty."""
    if not self._buffer_wheel:
      return 0
    return reduce(self._buffer_wheel, axis=0)[RuntimeCounter._fields.index(
        field)]

  def _mean_runtime_secs(self):
    return self._statistic(np.mean, 'runtime_secs')

  def _mean_step_time_secs(self):
    return self._statistic(np.mean, 'step_time_secs')

  def _std_step_time_secs(self):
    return self._statistic(np.std, 'step_time_secs')

  def _diff_less_than_percentage(self, actual, target, percentage):
    """Whether |target - actual| is at most `percentage`% of `target`."""
    if actual == 0:
      raise ValueError('Invalid `actual` value. Value must not be zero.')
    if target == 0:
      raise ValueError('Invalid `target` value. Value must not be zero.')
    return abs(target - actual) / float(target) <= percentage / 100.0

  def _is_step_time_stable(self):
    return (self._std_step_time_secs() < 0.03 and
            self._sample_count > self._capacity)

  def update(self, runtime_secs, count):
    """Records that a loop of `count` steps took `runtime_secs`; ignores a
    non-positive time or count."""
    if runtime_secs <= 0.0 or count <= 0:
      logging.debug('IterationCountEstimator: ignoring a loop of %s steps in '
                    '%s s.', count, runtime_secs)
      return
    if len(self._buffer_wheel) >= self._capacity:
      self._buffer_wheel.popleft()
    self._buffer_wheel.append(RuntimeCounter(
        runtime_secs=runtime_secs, steps=count,
        step_time_secs=float(runtime_secs) / count))
    self._sample_count += 1

  def get(self, total_secs):
    """The steps of the next loop for a budget of `total_secs` (> 0)."""
    if total_secs <= 0:
      raise ValueError('Invalid `total_secs`. It must be positive number. '
                       f'Actual:{total_secs}')
    if not self._buffer_wheel:
      return self._min_iterations
    settled = (
        (self._diff_less_than_percentage(
            self._buffer_wheel[-1].runtime_secs, total_secs, 10) or
         self._diff_less_than_percentage(
             self._mean_runtime_secs(), total_secs, 5)) and
        self._is_step_time_stable())
    if not settled:
      self._last_iterations = total_secs / self._mean_step_time_secs()
    self._last_iterations = max(self._last_iterations, self._min_iterations)
    logging.info('IterationCountEstimator -- target_runtime:%.3fs. '
                 'mean_step_time:%.3fs. next_steps:%.2f.', total_secs,
                 self._mean_step_time_secs(), self._last_iterations)
    return int(self._last_iterations + 0.5)
