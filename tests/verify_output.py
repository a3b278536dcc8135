"""Checks of what `python -m trainer.verify_migration` prints, shared by the
tests that run it (verify_migration_test, migration_doc_test)."""

import re

MAX_LINE = re.compile(r'^max \|dloss\|: (\S+) \(tolerance (\S+)\) \| '
                      r'max \|dw\|: (\S+) \((.*)\) \| (OK|FAIL)$', re.M)
ROW = re.compile(r'^\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$', re.M)
EPS = 2.0 ** -23
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


def expected_tolerance(precision, steps, losses):
  """verify_migration's loss tolerance, derived again from the formats:
  8 ulps per step in float32, 2 ulps of bfloat16's 8-bit significand, times
  the largest |loss|."""
  r = 2.0 ** -7 if precision == 'bfloat16' else 8 * steps * EPS
  return r * max(abs(l) for l in losses)


def check_ok(stdout, steps, precision, plot=None):
  """Asserts a passing comparison of `steps` rows within the tolerance the
  formats give; the max |dloss| it printed."""
  rows = ROW.findall(stdout)
  assert [int(r[0]) for r in rows] == list(range(1, steps + 1)), stdout
  max_dloss, tolerance, _, _, verdict = MAX_LINE.search(stdout).groups()
  assert verdict == 'OK', stdout
  assert float(max_dloss) == max(float(r[3]) for r in rows)
  assert float(max_dloss) <= float(tolerance)
  for _, loss_a, loss_b, dloss, _ in rows:
    assert abs(abs(float(loss_a) - float(loss_b)) - float(dloss)) < 1e-6
  losses = [float(r[1]) for r in rows]
  assert abs(float(tolerance) - expected_tolerance(
      precision, steps, losses)) <= 1e-3 * float(tolerance)
  if plot is not None:
    with open(plot, 'rb') as f:
      assert f.read(8) == PNG_MAGIC, plot
  return float(max_dloss)
