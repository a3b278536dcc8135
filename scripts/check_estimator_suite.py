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


def _documented(api, doc):
  """Whether DOC lists API: its full name, or one line naming its prefix
  (`tf.estimator.`) and its last part (`DNNClassifier`) as code."""
  if api in doc:
    return True
  prefix, _, name = api.rpartition('.')
  return any(f'`{prefix}.`' in line and f'`{name}`' in line
             for line in doc.splitlines())


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
  refused, broken = [], []
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
      else:
        broken.append((test, message))
  for test, message in broken:
    print(f'FAIL {test}: {message[:200]}')
  for test in refused:
    print(f'refused (documented in {os.path.basename(doc_path)}) {test}')
  print(f'estimator_suite: {passed} of {total} behavioural reference-passing '
        f'tests pass through the facade ({passed / max(total, 1):.1%}), '
        f'{len(refused)} refused as documented')
  print(f'estimator_suite: {passed + len(refused)} passed, {len(broken)} '
        'failed')
  return 0 if not broken and passed >= MIN_PASSING * total else 1


if __name__ == '__main__':
  sys.exit(main(sys.argv[1], sys.argv[2]))
