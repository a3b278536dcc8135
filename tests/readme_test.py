"""README.md and docs/ stay true: the flag table (docs/flags.md), the two
set-up commands, README's length and its links to pages that exist."""

import os
import re

from scripts import flag_reference
from tests import testutil

MAIN_COMMAND = ('bash scripts/setup_env.sh legacy && '
                '.venv/legacy/bin/python -m trainer.main')
TEST_COMMAND = 'bash scripts/test.sh'


def _read(*path):
  with open(os.path.join(testutil.REPO_ROOT, *path)) as f:
    return f.read()


def test_flag_table_matches_the_flags():
  table = _read('docs', 'flags.md')
  assert flag_reference.updated_readme(table) == table, (
      'docs/flags.md flag table is stale: run python -m '
      'scripts.flag_reference --update')


def test_readme_is_short_and_its_links_resolve():
  readme = _read('README.md')
  assert len(readme.splitlines()) <= 250
  for page in ['README.md'] + [os.path.join('docs', f) for f in sorted(
      os.listdir(os.path.join(testutil.REPO_ROOT, 'docs')))]:
    base = os.path.dirname(os.path.join(testutil.REPO_ROOT, page))
    for target in re.findall(r'\]\(([^)#:]+)(?:#[^)]*)?\)', _read(page)):
      assert os.path.exists(os.path.join(base, target)), (page, target)


def test_readme_commands_are_what_ci_runs():
  readme = _read('README.md')
  assert MAIN_COMMAND in readme and TEST_COMMAND in readme
  ci = [line for line in _read('.ci', 'run').splitlines()
        if line and not line.startswith('#')]
  assert TEST_COMMAND in ci



def test_readme_states_the_accuracy_spread_it_measured():
  low, high = testutil.stated_accuracy_range()
  assert 0.9 < low < high < 1.0
  measured = re.search(r'\((0\.\d+)–(0\.\d+)\s+measured',
                       _read('README.md').replace('\n', ' '))
  assert measured, 'README.md gives no measured spread'
  assert low <= float(measured.group(1)) <= float(measured.group(2)) <= high
