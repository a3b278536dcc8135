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


# What marks a test as exercising a path: the path's name as a string (a
# parametrize value, PATHS['main']), its command builder, the module that
# gives the path its guarantees, or its console script.
_PATH_MARKS = {
    'main': ("'main'", 'main_command', 'run_guard', "'tpu-trainer'"),
    'launcher': ("'launcher'", 'launcher_command', 'estimator_guard',
                 "'tpu-trainer-legacy'"),
}


def _test_source(name):
  """The source of test `name` (path::function): its decorators and body,
  with the module-level assignments the decorators name."""
  path, function = name.split('::')
  with open(os.path.join(testutil.REPO_ROOT, 'tests', path)) as f:
    text = f.read()
  tree = ast.parse(text)
  assigned = {target.id: ast.get_source_segment(text, node)
              for node in tree.body if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Name)}
  found, = [n for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name == function]
  source = ast.get_source_segment(text, found)
  for decorator in found.decorator_list:
    source += ast.get_source_segment(text, decorator)
    source += ''.join(assigned.get(n.id, '') for n in ast.walk(decorator)
                      if isinstance(n, ast.Name))
  return source


def test_every_path_of_a_case_is_run_by_one_of_its_tests():
  """A row claims a path (a column with an exit status) only when one of
  the tests it names runs that path."""
  for case in cases.CASES:
    sources = [_test_source(name) for name in case.tests]
    for path in case.paths:
      assert any(mark in source for source in sources
                 for mark in _PATH_MARKS[path]), (
                     f'{case.key}: no test of {", ".join(case.tests)} runs '
                     f'the {path} path')


def test_a_path_claimed_without_a_test_fails_the_check():
  claimed = cases.Case('x', 'x', ('main',), '0', 'x',
                       ['faults/cpu_fallback_test.py::'
                        'test_cross_shard_optimizer_runs_as_one_replica'], 'x')
  source = _test_source(claimed.tests[0])
  assert any(mark in source for mark in _PATH_MARKS['launcher'])
  assert not any(mark in source for mark in _PATH_MARKS['main'])
