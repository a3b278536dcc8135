"""docs/robustness.md's fault table is tests/faults/cases.py's, and every
test a row names exists: the document cannot claim what no test checks."""

import ast
import os

from tests import testutil
from tests.faults import cases

DOC = os.path.join(testutil.REPO_ROOT, 'docs', 'robustness.md')
START = '<!-- fault table: generated from tests/faults/cases.py'
END = '<!-- end of fault table -->'


def _doc_table():
  with open(DOC) as f:
    text = f.read()
  assert START in text and END in text, f'{DOC} has no fault table markers'
  block = text[text.index(START):text.index(END)]
  return block.splitlines()[1:]


def test_the_documented_table_is_the_tested_one():
  documented = _doc_table()
  tested = cases.table()
  missing = [line for line in tested if line not in documented]
  extra = [line for line in documented if line not in tested]
  assert not missing and not extra, (
      'docs/robustness.md and tests/faults/cases.py disagree; paste '
      "cases.table() between the markers.\nonly in cases.py:\n" +
      '\n'.join(missing) + '\nonly in the doc:\n' + '\n'.join(extra))
  assert documented == tested  # Same order too.


def test_every_named_test_exists():
  for case in cases.CASES:
    assert case.tests, case.key
    for name in case.tests:
      path, function = name.split('::')
      with open(os.path.join(testutil.REPO_ROOT, 'tests', path)) as f:
        tree = ast.parse(f.read())
      functions = {n.name for n in ast.walk(tree)
                   if isinstance(n, ast.FunctionDef)}
      assert function in functions, f'{case.key}: no {name}'


def test_every_case_is_run_by_a_test_that_uses_it():
  """Each case's key appears in one of its tests' modules (they take the
  expected status and message from cases.py), or the case is prose."""
  for case in cases.CASES:
    if case.message.startswith('(') or case.key in (
        'help', 'evaluator-not-blocked'):
      continue
    sources = ''
    for name in case.tests:
      with open(os.path.join(testutil.REPO_ROOT, 'tests',
                             name.split('::')[0])) as f:
        sources += f.read()
    assert f"'{case.key}'" in sources, (
        f'no test of {case.key} takes its expectation from cases.py')
