"""README.md stays true: its flag table and its two set-up commands."""

import os

from scripts import flag_reference
from tests import testutil

MAIN_COMMAND = ('bash scripts/setup_env.sh legacy && '
                '.venv/legacy/bin/python -m trainer.main')
TEST_COMMAND = 'bash scripts/test.sh'


def _read(*path):
  with open(os.path.join(testutil.REPO_ROOT, *path)) as f:
    return f.read()


def test_flag_table_matches_the_flags():
  readme = _read('README.md')
  assert flag_reference.updated_readme(readme) == readme, (
      'README flag table is stale: run python -m scripts.flag_reference '
      '--update')


def test_readme_commands_are_what_ci_runs():
  readme = _read('README.md')
  assert MAIN_COMMAND in readme and TEST_COMMAND in readme
  ci = [line for line in _read('.ci', 'run').splitlines()
        if line and not line.startswith('#')]
  assert TEST_COMMAND in ci
