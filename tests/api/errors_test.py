"""One error policy: every error type the project raises for a user derives
from trainer.api.errors.TrainerError (entry points print it as one line)."""

import ast
import glob
import os


# The real source tree (under Bazel too, where this file is a symlink).
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))))
_SOURCES = ('trainer', 'model_fn', 'input_fn')
# Exceptions used for control flow inside one module, never seen by users.
_INTERNAL = {'NewVariableError', 'UnreadableIndexError'}


def _error_classes():
  """(path, class name, base names) of every *Error class in the sources."""
  for package in _SOURCES:
    pattern = os.path.join(REPO_ROOT, package, '**', '*.py')
    for path in glob.glob(pattern, recursive=True):
      with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
      for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name.endswith('Error'):
          yield path, node.name, [ast.unparse(b) for b in node.bases]


def test_every_project_error_derives_from_trainer_error():
  found = list(_error_classes())
  assert len(found) >= 15  # The walk sees the project's error types.
  stray = [f'{os.path.relpath(p, REPO_ROOT)}: {name}({", ".join(b)})'
           for p, name, b in found
           if name not in _INTERNAL and name != 'TrainerError' and
           not any(base.endswith('TrainerError') for base in b)]
  assert not stray, 'errors not derived from TrainerError:\n' + '\n'.join(
      stray)
