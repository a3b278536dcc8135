"""conftest's check that no test leaves a file in the checkout sees a new
file and nothing else."""

import os
import shutil
import subprocess

import pytest

from tests import conftest


@pytest.mark.skipif(shutil.which('git') is None, reason='needs git')
def test_untracked_files_are_the_new_ones_git_does_not_ignore(tmp_path):
  subprocess.run(['git', 'init', '-q', str(tmp_path)], check=True)
  (tmp_path / '.gitignore').write_text('ignored/\n*.pyc\n')
  (tmp_path / 'tracked.py').write_text('x = 1\n')
  subprocess.run(['git', '-C', str(tmp_path), 'add', '.'], check=True)
  assert conftest.untracked_files(str(tmp_path)) == set()
  (tmp_path / 'ignored').mkdir()
  (tmp_path / 'ignored' / 'model.ckpt').write_text('')
  (tmp_path / 'tracked.pyc').write_text('')
  (tmp_path / 'events.out.tfevents.1.vm').write_text('')
  (tmp_path / 'sub').mkdir()
  (tmp_path / 'sub' / 'new.txt').write_text('')
  assert conftest.untracked_files(str(tmp_path)) == {
      'events.out.tfevents.1.vm', 'sub/new.txt'}


def test_outside_a_checkout_there_is_nothing_to_check(tmp_path):
  assert conftest.untracked_files(str(tmp_path)) is None


def test_this_checkout_is_checked():
  if not os.path.exists(os.path.join(conftest.REPO_ROOT, '.git')):
    pytest.skip('not a git checkout (Bazel runfiles): nothing to leave')
  assert conftest.untracked_files() is not None
