"""Compares a lane's observables of a cell with the golden's.

Names, shapes, dtypes, steps, tags, hook calls and errors must be equal;
floats within rtol 1e-5 (atol 1e-6 for values near 0). Keys not compared:
'time' (seconds) and 'refusal' (how the project refused).
"""

import math

RTOL = 1e-5
ATOL = 1e-6
IGNORED = ('time', 'refusal')


def _short(value, limit=120):
  text = repr(value)
  return text if len(text) <= limit else text[:limit] + '...'


def _close(a, b):
  if math.isnan(a) or math.isnan(b):
    return math.isnan(a) and math.isnan(b)
  return abs(a - b) <= ATOL + RTOL * abs(b)


def _walk(expected, got, path, out):
  if isinstance(expected, dict) and isinstance(got, dict):
    for key in sorted(set(expected) | set(got)):
      if key in IGNORED and not path:
        continue
      if key not in got:
        out.append(f'{path}/{key}: expected {_short(expected[key])}, missing')
      elif key not in expected:
        out.append(f'{path}/{key}: not expected, got {_short(got[key])}')
      else:
        _walk(expected[key], got[key], f'{path}/{key}', out)
  elif isinstance(expected, list) and isinstance(got, list):
    if len(expected) != len(got):
      out.append(f'{path}: expected {len(expected)} items '
                 f'{_short(expected)}, got {len(got)} {_short(got)}')
      return
    for i, (e, g) in enumerate(zip(expected, got)):
      _walk(e, g, f'{path}[{i}]', out)
  elif (isinstance(expected, float) or isinstance(got, float)) and all(
      isinstance(v, (int, float)) and not isinstance(v, bool)
      for v in (expected, got)):
    if type(expected) is not type(got) and not (
        isinstance(expected, float) and isinstance(got, float)):
      out.append(f'{path}: expected {_short(expected)} '
                 f'({type(expected).__name__}), got {_short(got)} '
                 f'({type(got).__name__})')
    elif not _close(float(got), float(expected)):
      out.append(f'{path}: expected {expected!r}, got {got!r}')
  elif expected != got or type(expected) is not type(got):
    out.append(f'{path}: expected {_short(expected)}, got {_short(got)}')


def differences(expected, got):
  """Every difference of got from expected, as 'path: expected ..., got ...'."""
  out = []
  _walk(expected, got, '', out)
  return out
