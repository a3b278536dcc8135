"""docs/layout.md describes the tree as it is: every package of the library
and every module directly in trainer/ has its line, and every path the page
names exists.

Reads the real source tree (under Bazel too, as build_files_test: not
runfiles).
"""

import os
import re

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
LAYOUT = os.path.join(REPO_ROOT, 'docs', 'layout.md')
LIBRARY = ('trainer', 'model_fn', 'input_fn')


def _rows():
  """[(paths of the first column, backquoted names of the second)] of the
  layout table."""
  rows = []
  with open(LAYOUT, encoding='utf-8') as f:
    for line in f:
      cells = [c.strip() for c in line.strip().strip('|').split('|')]
      if not line.startswith('|') or len(cells) < 2 or set(cells[0]) <= {
          '-', ':'}:
        continue
      rows.append((re.findall(r'`([^`]+)`', cells[0]),
                   re.findall(r'`([^`]+)`', cells[1])))
  return rows


def _packages():
  """Every package directory of the library, relative, with a slash."""
  found = []
  for top in LIBRARY:
    for dirpath, dirnames, filenames in os.walk(os.path.join(REPO_ROOT, top)):
      dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
      if '__init__.py' in filenames:
        found.append(os.path.relpath(dirpath, REPO_ROOT) + '/')
  return found


def test_every_package_and_loose_trainer_module_has_a_line():
  named = {path for paths, _ in _rows() for path in paths}
  loose = [f'trainer/{n}' for n in os.listdir(os.path.join(REPO_ROOT,
                                                            'trainer'))
           if n.endswith('.py') and n != '__init__.py']
  missing = sorted(p for p in _packages() + loose if p not in named)
  assert not missing, f'docs/layout.md has no line for {missing}'


def test_every_path_named_exists():
  missing = []
  for paths, names in _rows():
    for path in paths:
      if not os.path.exists(os.path.join(REPO_ROOT, path)):
        missing.append(path)
    bases = [p for p in paths if p.endswith('/')]
    for name in names:
      if not name.endswith(('.py', '/')) or ' ' in name:
        continue  # A flag, a command or an API name, not a path.
      if not any(os.path.exists(os.path.join(REPO_ROOT, base, name))
                 for base in bases + ['']):
        missing.append(f'{name} (row {paths})')
  assert not missing, ('docs/layout.md names paths that do not exist: '
                       f'{missing}')


def test_the_table_is_read():
  rows = _rows()
  assert any(paths == ['trainer/runtime/'] and 'modes.py' in names
             for paths, names in rows)
  assert 'trainer/engines/graph/' in _packages()


ARCHITECTURE = os.path.join(REPO_ROOT, 'docs', 'architecture.md')
# A repository path in docs/architecture.md's text: under a top directory
# of the repository, ending in .py or a slash.
_ARCHITECTURE_PATH = re.compile(
    r'(?<![\w/.])((?:trainer|model_fn|input_fn|tests|bench|scripts|docs|'
    r'requirements)/[\w/.]*?(?:\.py|/))(?![\w/])')


def test_architecture_page_names_existing_paths():
  with open(ARCHITECTURE, encoding='utf-8') as f:
    text = f.read()
  paths = sorted(set(_ARCHITECTURE_PATH.findall(text)))
  assert 'trainer/facade/estimator.py' in paths  # The dispatch it describes.
  assert 'trainer/runners/registry.py' in paths
  missing = [p for p in paths
             if not os.path.exists(os.path.join(REPO_ROOT, p))]
  assert not missing, ('docs/architecture.md names paths that do not exist: '
                       f'{missing}')


def test_architecture_page_names_the_dispatch_it_describes():
  """The engine choice the page documents is the facade's method."""
  with open(ARCHITECTURE, encoding='utf-8') as f:
    text = f.read()
  with open(os.path.join(REPO_ROOT, 'trainer', 'facade', 'estimator.py'),
            encoding='utf-8') as f:
    source = f.read()
  assert 'Estimator._needs_tf2' in text
  assert 'def _needs_tf2(self, mode):' in source
