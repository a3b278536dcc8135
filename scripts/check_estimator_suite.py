"""Judges an estimator_suite run: python check_estimator_suite.py OUT DOC.

OUT holds the suite's results (run.sh's ESTIMATOR_SUITE_OUT): summary.txt
(what its summarize.py printed) and modern_failures.tsv. DOC is
MIGRATION.md. Every behavioural test that passes on the real Estimator must
pass through the facade, or fail with the facade's named refusal
(UnsupportedApiError: '<api> is not supported by trainer.legacy') of an API
that DOC lists. Prints the failures, then 'estimator_suite: N passed, M
failed' (N: behavioural reference-passing tests that pass or are refused as
documented); exits 1 if any failed or fewer than 90% pass outright.
"""

import os
import re
import sys

_REFUSAL = re.compile(r'(tf\.[\w.]+) is not supported by trainer\.legacy')
_SUMMARY = re.compile(r'^facade: \d+ of \d+ reference-passing tests pass '
                      r'\(behavioural subset: (\d+) of (\d+)\)', re.M)
MIN_PASSING = 0.9
# Known, documented differences: test id -> the MIGRATION.md text naming it.
KNOWN_GAPS = {
    'regression_head_test::RegressionHeadForEstimator::'
    'test_weighted_multi_batch_eval': (
        "numpy_input_fn on tf.data: no queue-fill summary"),
}


def _documented(api, doc):
  """Whether DOC lists API: its full name, or one line naming its prefix
  (`tf.estimator.`) and its last part (`DNNClassifier`) as code."""
  if api in doc:
    return True
  prefix, _, name = api.rpartition('.')
  return any(f'`{prefix}.`' in line and f'`{name}`' in line
             for line in doc.splitlines())


def _ran_tests(out):
  """'module::Class::test' of every test the facade lane ran (its junit
  xml files)."""
  import xml.etree.ElementTree as ElementTree  # pylint: disable=g-import-not-at-top
  ran = set()
  lane = os.path.join(out, 'modern')
  for name in sorted(os.listdir(lane)) if os.path.isdir(lane) else ():
    if not name.endswith('.xml'):
      continue
    module = name[:-len('.xml')]
    for case in ElementTree.parse(os.path.join(lane, name)).iter('testcase'):
      cls = case.get('classname', '').rsplit('.', 1)[-1]
      ran.add(f'{module}::{cls}::{case.get("name")}')
  return ran


def main(out, doc_path):
  with open(doc_path, encoding='utf-8') as f:
    doc = f.read()
  with open(os.path.join(out, 'summary.txt'), encoding='utf-8') as f:
    summary = _SUMMARY.search(f.read())
  if summary is None:
    print(f'estimator_suite: no summary line in {out}/summary.txt')
    print('estimator_suite: 0 passed, 1 failed')
    return 1
  passed, total = int(summary.group(1)), int(summary.group(2))
  refused, broken, known = [], [], []
  with open(os.path.join(out, 'modern_failures.tsv'), encoding='utf-8') as f:
    for line in f:
      if line.startswith('#') or not line.strip():
        continue
      test, _, kind, _, message = line.rstrip('\n').split('\t', 4)
      if kind != 'B':
        continue
      match = _REFUSAL.search(message)
      if match and _documented(match.group(1), doc):
        refused.append(test)
      elif test in KNOWN_GAPS and KNOWN_GAPS[test] in doc:
        known.append(test)
      else:
        broken.append((test, message))
  for test, message in broken:
    print(f'FAIL {test}: {message[:200]}')
  for test in refused:
    print(f'refused (documented in {os.path.basename(doc_path)}) {test}')
  for test in known:
    print(f'known gap (documented in {os.path.basename(doc_path)}: '
          f'{KNOWN_GAPS[test]}) {test}')
  ran = _ran_tests(out)
  for test in sorted(set(KNOWN_GAPS) - set(known)):
    if test in ran:  # It ran and did not fail: the gap is closed.
      broken.append((test, 'passes now: remove it from KNOWN_GAPS'))
      print(f'FAIL {test}: passes now: remove it from KNOWN_GAPS in '
            f'{os.path.basename(__file__)}')
  print(f'estimator_suite: {passed} of {total} behavioural reference-passing '
        f'tests pass through the facade ({passed / max(total, 1):.1%}), '
        f'{len(refused)} refused as documented, {len(known)} known gaps')
  print(f'estimator_suite: {passed + len(refused)} passed, {len(broken)} '
        'failed')
  return 0 if not broken and passed >= MIN_PASSING * total else 1


if __name__ == '__main__':
  sys.exit(main(sys.argv[1], sys.argv[2]))
