"""TPUEstimator's configuration helpers (tensorflow_estimator's tpu/util.py):
parse_iterations_per_loop, check_positive_integer, IterationsPerLoopCounter
(and MultiHostDatasetInitializerHook, util.py's).
"""

import collections
import re

import numpy as np

from trainer.facade import util

MultiHostDatasetInitializerHook = util.MultiHostDatasetInitializerHook

IterationsPerLoopCounter = collections.namedtuple('IterationsPerLoopCounter',
                                                  ['value', 'unit'])
_ITERATIONS = re.compile(r'^(?P<value>[1-9][0-9]*)(?P<suffix>[smh]?)$')
_SECONDS_PER = {'s': 1, 'm': 60, 'h': 3600}
# The reference's pattern (which also accepts '|' as a unit; _ITERATIONS
# does not).
_ITERATIONS_PER_LOOP_VALUE_REGEX = re.compile(
    r'^(?P<value>[1-9]\d*)((?P<suffix>[s|m|h])$|$)')


def check_positive_integer(value, name):
  """TypeError unless an integer, ValueError unless positive."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
    raise TypeError(f'{name} must be int, got {type(value)}')
  if value <= 0:
    raise ValueError(f'{name} must be positive, got {value}')


def parse_iterations_per_loop(iterations_per_loop):
  """TPUConfig.iterations_per_loop as (value, 'count'|'seconds'): a positive
  number of steps, or a duration '<N>s', '<N>m', '<N>h'."""
  match = _ITERATIONS.match(str(iterations_per_loop))
  if match is None:
    raise ValueError(
        'Invalid TPUConfig `iterations_per_loop` value. Value must be positive '
        'integer value or time-based value `<N><s|m|h>` where <N> is any '
        'positive integer and `s`, `m`, `h` are unit of time in seconds, '
        'minutes, hours respectively. Examples of valid values: `3600s`, '
        f'`60m`, `1h`. Got {iterations_per_loop!r}.')
  suffix = match.group('suffix')
  value = int(match.group('value'))
  if not suffix:
    return IterationsPerLoopCounter(value, 'count')
  return IterationsPerLoopCounter(value * _SECONDS_PER[suffix], 'seconds')
