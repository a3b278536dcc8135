"""Every command in MIGRATION.md runs and succeeds."""

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests import testutil

pytestmark = testutil.requires_estimator

DOC = os.path.join(testutil.REPO_ROOT, 'MIGRATION.md')
DOC_DIR = '/tmp/migration'


def commands():
  """The lines of the ```sh blocks of MIGRATION.md, in order."""
  with open(DOC) as f:
    blocks = re.findall(r'^```sh\n(.*?)^```', f.read(), re.M | re.S)
  return [line for block in blocks for line in block.splitlines()
          if line.strip()]


def test_doc_has_commands_for_each_step():
  found = commands()
  assert any('--runner=tf2' in c and 'trainer.main' in c for c in found)
  assert any('trainer.verify_migration' in c for c in found)
  assert any('--runner=estimator --mode=evaluate' in c for c in found)
  assert all(c.startswith('python -m ') for c in found), found


def test_every_command_runs(tmp_path):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  for command in commands():
    args = shlex.split(command.replace(DOC_DIR, str(tmp_path)))
    args[0] = sys.executable
    result = subprocess.run(args, cwd=testutil.REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (command, result.stderr[-3000:])
    if '--mode=evaluate' in command:
      assert re.search(r'^global_step: 200$', result.stdout, re.M), (
          result.stdout)
  assert (tmp_path / 'mlp.png').stat().st_size > 0
