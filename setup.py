"""Builds the installable package `tpu_trainer` (metadata: pyproject.toml).

The repository's own top-level names (flags, trainer, model_fn, input_fn) are
too generic for a user's site-packages, so the wheel holds them one level
down, under the one distinct top-level package `tpu_trainer`:

  tpu_trainer/__init__.py, cli.py, __main__.py   tools/package/tpu_trainer/
  tpu_trainer/flags.py                           flags.py
  tpu_trainer/{trainer,model_fn,input_fn}/       trainer/, model_fn/, input_fn/
  tpu_trainer/data/digits/, tpu_trainer/configs/ data/digits/, configs/*.cfg

and rewrites the copies' absolute imports of those four names, line for line
(`import flags as f` -> `from tpu_trainer import flags as f`, `from trainer.x
import y` -> `from tpu_trainer.trainer.x import y`), so the installed code
never imports, and never shadows, a user's own `flags` or `trainer`. The
data sits where it sits in a clone relative to trainer/params.py, so the
trainer's defaults find it unchanged. The checkout itself is never modified:
`python -m trainer.main` from a clone runs the sources as they are.
Details: docs/install.md.
"""

import ast
import os
import re
import shutil

import setuptools
from setuptools.command import build_py

PACKAGE = 'tpu_trainer'
ROOTS = ('flags', 'trainer', 'model_fn', 'input_fn')  # The repo's top level.
SUBPACKAGES = ('trainer', 'model_fn', 'input_fn')
DATA = ('data/digits/raw', 'data/digits/jpeg', 'configs')
HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_BASE = '.build'  # Not build/: it clashes with BUILD on macOS.


def _packages():
  found = [PACKAGE]
  for top in SUBPACKAGES:
    for dirpath, dirnames, filenames in os.walk(os.path.join(HERE, top)):
      dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
      if '__init__.py' in filenames:
        rel = os.path.relpath(dirpath, HERE).replace(os.sep, '.')
        found.append(f'{PACKAGE}.{rel}')
  return found


def _new_import(node, line):
  """The text replacing import statement `node` (on one line of `line`)."""
  if isinstance(node, ast.ImportFrom):
    match = re.compile(r'from\s+').match(line, node.col_offset)
    if not match or not line.startswith(node.module, match.end()):
      raise ValueError(f'unexpected import form: {line.strip()}')
    return None, match.end()  # Insert the prefix at this column.
  if len(node.names) != 1:
    raise ValueError(f'one module per import statement: {line.strip()}')
  alias = node.names[0]
  if '.' in alias.name and not alias.asname:
    raise ValueError(f'`import a.b` binds `a`; write `from a import b`: '
                     f'{line.strip()}')
  parent, _, leaf = f'{PACKAGE}.{alias.name}'.rpartition('.')
  return f'from {parent} import {leaf} as {alias.asname or leaf}', None


def rewrite_imports(source, path='<source>'):
  """`source` with its absolute imports of ROOTS moved under PACKAGE.

  Line numbers are kept (tracebacks match the repository's files); already
  rewritten imports are left alone, so it is idempotent. ValueError for an
  import form it does not handle.
  """
  lines = source.splitlines(keepends=True)
  edits = []
  for node in ast.walk(ast.parse(source, path)):
    if isinstance(node, ast.ImportFrom):
      if node.level or not node.module or (
          node.module.split('.')[0] not in ROOTS):
        continue
    elif isinstance(node, ast.Import):
      if not any(a.name.split('.')[0] in ROOTS for a in node.names):
        continue
    else:
      continue
    if node.lineno != node.end_lineno and isinstance(node, ast.Import):
      raise ValueError(f'{path}:{node.lineno}: multi-line import')
    try:
      edits.append((node, _new_import(node, lines[node.lineno - 1])))
    except ValueError as e:
      raise ValueError(f'{path}:{node.lineno}: {e}') from None
  for node, (text, column) in sorted(
      edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
    line = lines[node.lineno - 1]
    if text is None:
      line = f'{line[:column]}{PACKAGE}.{line[column:]}'
    else:
      line = line[:node.col_offset] + text + line[node.end_col_offset:]
    lines[node.lineno - 1] = line
  return ''.join(lines)


class BuildPy(build_py.build_py):
  """build_py, plus flags.py, the data and configs, and rewritten imports."""

  def run(self):
    super().run()
    target = os.path.join(self.build_lib, PACKAGE)
    self.copy_file(os.path.join(HERE, 'flags.py'),
                   os.path.join(target, 'flags.py'), preserve_mode=False)
    for rel in DATA:
      destination = os.path.join(target, rel)
      if os.path.isdir(destination):
        shutil.rmtree(destination)
      shutil.copytree(os.path.join(HERE, rel), destination,
                      ignore=shutil.ignore_patterns('BUILD', '*.py'))
    for dirpath, _, filenames in os.walk(target):
      for name in filenames:
        if name.endswith('.py'):
          path = os.path.join(dirpath, name)
          with open(path, encoding='utf-8') as f:
            source = f.read()
          rewritten = rewrite_imports(source, path)
          if rewritten != source:
            with open(path, 'w', encoding='utf-8') as f:
              f.write(rewritten)


if __name__ == '__main__':
  os.makedirs(os.path.join(HERE, BUILD_BASE), exist_ok=True)
  package_dir = {PACKAGE: 'tools/package/tpu_trainer'}
  package_dir.update({f'{PACKAGE}.{top}': top for top in SUBPACKAGES})
  setuptools.setup(
      packages=_packages(),
      package_dir=package_dir,
      include_package_data=False,
      # The facade reads tensorflow_estimator 2.15's inventory at install();
      # trainer.migrate's templates of the programs it writes.
      package_data={f'{PACKAGE}.trainer.facade': ['inventory.json'],
                    f'{PACKAGE}.trainer.migrate': ['templates/*.tmpl']},
      cmdclass={'build_py': BuildPy},
      options={'build': {'build_base': BUILD_BASE},
               'egg_info': {'egg_base': BUILD_BASE}},
  )
