"""How the canned-Estimator tests compare a record of the facade with the
real Estimator's (JSON values: numbers within a tolerance)."""

import json
import math

RTOL, ATOL = 1e-4, 1e-5


def differences(real, facade, path='', rtol=RTOL):
  """Where two records differ (numbers within rtol/ATOL; rtol None: any
  numbers of the same type)."""
  if isinstance(real, dict) and isinstance(facade, dict):
    if set(real) != set(facade):
      return [f'{path}: keys only in TF 2.15 {sorted(set(real) - set(facade))}'
              f', only in the facade {sorted(set(facade) - set(real))}']
    return [d for k in sorted(real)
            for d in differences(real[k], facade[k], f'{path}/{k}', rtol)]
  if isinstance(real, list) and isinstance(facade, list):
    if len(real) != len(facade):
      return [f'{path}: {len(real)} items != {len(facade)}']
    return [d for i, (a, b) in enumerate(zip(real, facade))
            for d in differences(a, b, f'{path}[{i}]', rtol)]
  numbers = (int, float)
  if (isinstance(real, numbers) and isinstance(facade, numbers) and
      not isinstance(real, bool) and not isinstance(facade, bool)):
    if rtol is None and type(real) is type(facade):
      return []
    if rtol is not None and math.isclose(real, facade, rel_tol=rtol,
                                         abs_tol=ATOL):
      return []
  elif real == facade and type(real) is type(facade):
    return []
  return [f'{path}: {real!r} != {facade!r}']


def comparable(part, value):
  """A record's part as compared: training summaries' values are those of
  `loss` only (the others read variables the same step updates, in either
  order)."""
  if part != 'summaries' or not value:
    return value
  value = json.loads(json.dumps(value))
  for tag, points in value.get('.', {}).items():
    if tag != 'loss':
      value['.'][tag] = [[step, None] for step, _ in points]
  return value
