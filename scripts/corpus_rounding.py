"""Re-judges a corpus cell that failed only by float rounding across TF
versions.

The shared corpus (../shared/corpus/run.sh) compares TF 2.20's evaluation of
a reference checkpoint with TF 2.15's at an absolute 1e-5. On losses of
1e10 (efficientnet's diverged toy run) that is bit for bit, which TensorFlow
itself does not give across releases: TF 2.20's tf.sigmoid differs from TF
2.15's on identical inputs by up to 7 ulp (measured, docs/corpus.md), so
every swish network drifts by about 1e-7 relative.

A FAIL line is re-judged only when all of these hold, else it stays a FAIL:
  * the cell ran on another TF release than its reference (a 2.15 lane is
    never re-judged: there the project must match the Estimator bit for bit);
  * every problem is '<metric> <value> != reference <value> (tol <t>)';
  * the reference record is found (<case>_ref-2.15_*.json in the work dir)
    and every one of its metrics is within RELATIVE_TOL of the cell's.

  python scripts/corpus_rounding.py WORK_DIR 'FAIL LINE'
prints one line, 'NAME: ok ...' (exit 0) or the FAIL line unchanged (exit 1).
"""

import glob
import json
import os
import re
import sys

# Far below any semantic error (a missing or double-counted batch moves a
# mean by >= 1e-3), far above float32 rounding drift (~1e-7 measured).
RELATIVE_TOL = 1e-5

_LINE = re.compile(r'^(?P<name>[^:]+): FAIL (?P<problems>.*?)(?P<secs> \[\d+s\])?$')
_PROBLEM = re.compile(r'^(?P<key>\S+) (?P<value>\S+) != reference '
                      r'(?P<ref>\S+) \(tol (?P<tol>\S+)\)$')
_REFERENCE_LANE = 'ref-2.15'


def _records(work, pattern):
  for path in sorted(glob.glob(os.path.join(work, pattern))):
    with open(path) as f:
      yield path, json.load(f)


def _reference(work, case, printed):
  """The reference record whose metrics print as the FAIL line's."""
  for path, record in _records(work, '%s_%s_*.json' % (case, _REFERENCE_LANE)):
    metrics = record.get('metrics', {})
    if record.get('ok') and all(
        key in metrics and '%.6g' % metrics[key] == value
        for key, value in printed.items()):
      return path, metrics
  return None, None


def _release(lane):
  m = re.search(r'\d+\.\d+', lane)
  return m.group(0) if m else lane


def rejudge(work, line):
  """Returns (ok, text): the re-judged line, or the FAIL line unchanged."""
  line = line.rstrip('\n')
  m = _LINE.match(line)
  if not m:
    return False, line
  name = m.group('name')
  parts = name.split('/')
  if len(parts) != 3 or _release(parts[1]) in ('2.15', parts[1]):
    return False, line
  printed = {}
  for problem in m.group('problems').split('; '):
    p = _PROBLEM.match(problem)
    if not p:
      return False, line
    printed[p.group('key')] = p.group('ref')
  cell_path = os.path.join(work, name.replace('/', '_') + '.json')
  if not os.path.exists(cell_path):
    return False, line
  with open(cell_path) as f:
    cell = json.load(f).get('metrics', {})
  ref_path, ref = _reference(work, parts[0], printed)
  if ref is None:
    return False, line
  worst = 0.0
  for key, value in ref.items():
    if key not in cell:
      return False, line
    scale = max(abs(value), abs(cell[key]))
    rel = abs(cell[key] - value) / scale if scale else 0.0
    if not rel <= RELATIVE_TOL:   # NaN stays a failure.
      return False, line
    worst = max(worst, rel)
  return True, ('%s: ok = reference (%s) within relative %g (max %.1e), not '
                'bit for bit: TF %s rounds differently from TF 2.15 '
                '(docs/corpus.md)%s'
                % (name, os.path.basename(ref_path), RELATIVE_TOL, worst,
                   _release(parts[1]),
                   m.group('secs') or ''))


def main(argv):
  if len(argv) != 3:
    sys.stderr.write(__doc__)
    return 2
  ok, text = rejudge(argv[1], argv[2])
  print(text)
  return 0 if ok else 1


if __name__ == '__main__':
  sys.exit(main(sys.argv))
