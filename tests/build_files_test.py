"""BUILD files cover the source tree: no module, test or entry point forgotten.

Reads every BUILD file of the repository (they are Starlark, which parses as
Python) and checks that
  * every directory holding .py files has a BUILD file;
  * every .py file is a source of a py_* target of its package;
  * every source, main and data file a BUILD file names exists, every
    target a dep or data entry names exists, and is visible to the target
    that names it (Bazel's visibility rules: public, __pkg__,
    __subpackages__, the package's default_visibility);
  * every test module has a py_test, every `__main__` module a py_binary;
  * every target reaches through `deps` a target for each module of this
    repository it imports (Bazel enforces the same at run time, where only
    the sources of declared deps are in runfiles; here it is checked
    statically, in a second, for code that no test runs too).

Under Bazel the test reads the real source tree (its own file's real path),
not runfiles: it checks the BUILD files themselves, so its target is tagged
`external` and never cached.
"""

import ast
import configparser
import fnmatch
import glob as glob_lib
import os

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# Not Bazel packages: data, local Bazel stand-ins, scratch (.gitignore'd).
SKIP_DIRS = {'data', 'third_party', 'tmp', '__pycache__'}
PY_RULES = {'py_library', 'py_binary', 'py_test', 'py_pytest'}
IMPLICIT_PYTEST_DEPS = ('__init__', 'conftest')
PYTEST_MAIN = 'tools/python/pytest_main.py'  # main of every py_pytest


def _source_dirs():
  """Repository directories (relative) that hold .py files or a BUILD file."""
  for dirpath, dirnames, filenames in os.walk(REPO_ROOT):
    dirnames[:] = sorted(
        d for d in dirnames
        if d not in SKIP_DIRS and not d.startswith(('.', 'bazel-')))
    if 'BUILD' in filenames or any(f.endswith('.py') for f in filenames):
      package = os.path.relpath(dirpath, REPO_ROOT)
      yield '' if package == '.' else package


_PACKAGE_DEFAULTS = {}  # package -> its package(default_visibility=...)


def _read_build(package):
  """The rules of PACKAGE's BUILD file: [(kind, attrs)]."""
  package_dir = os.path.join(REPO_ROOT, package)
  rules = []

  def rule(kind):
    def record(*args, **attrs):
      del args  # exports_files(["f"]): not a target
      rules.append((kind, attrs))
    return record

  def glob(include, exclude=(), allow_empty=True):
    del allow_empty
    found = set()
    for pattern in include:
      for path in glob_lib.glob(os.path.join(package_dir, pattern),
                                recursive=True):
        if os.path.isfile(path):
          found.add(os.path.relpath(path, package_dir))
    for pattern in exclude:
      found -= set(fnmatch.filter(found, pattern))
    return sorted(found)

  names = {k: rule(k) for k in PY_RULES | {
      'filegroup', 'exports_files', 'py_runtime', 'py_runtime_pair',
      'toolchain', 'alias', 'package_group', 'sh_binary', 'sh_test'}}
  names.update(glob=glob, load=lambda *a, **k: None,
               package=lambda **k: _PACKAGE_DEFAULTS.__setitem__(
                   package, k.get('default_visibility', [])))
  path = os.path.join(package_dir, 'BUILD')
  with open(path, encoding='utf-8') as f:
    code = compile(f.read(), path, 'exec')
  try:
    exec(code, names)  # pylint: disable=exec-used
  except NameError as e:
    raise AssertionError(f'{path}: unknown rule or function ({e}); teach '
                         'tests/build_files_test.py about it.') from e
  return rules


def _file_of(package, label):
  """Repository-relative path of a source label, or None for outputs."""
  if label.startswith('@'):
    return None
  if label.startswith('//'):
    package, _, name = label[2:].partition(':')
  else:
    name = label.lstrip(':')
  return os.path.normpath(os.path.join(package, name))


def _target_label(package, label):
  if label.startswith('//'):
    pkg, _, name = label[2:].partition(':')
    return f'//{pkg}:{name or os.path.basename(pkg)}'
  return f'//{package}:{label.lstrip(":")}'


@pytest.fixture(scope='module')
def targets():
  """{label: (package, kind, attrs)} of every rule in every BUILD file."""
  found = {}
  for package in _source_dirs():
    if not os.path.exists(os.path.join(REPO_ROOT, package, 'BUILD')):
      continue
    for kind, attrs in _read_build(package):
      if 'name' in attrs:
        found[f'//{package}:{attrs["name"]}'] = (package, kind, attrs)
  return found


def _py_targets(targets):
  return {label: t for label, t in targets.items() if t[1] in PY_RULES}


def _srcs(package, kind, attrs):
  srcs = list(attrs.get('srcs') or [attrs['name'] + '.py'])
  return [_file_of(package, s) for s in srcs]


def _owners(targets):
  """{source file: {labels of py targets listing it}}."""
  owners = {}
  for label, (package, kind, attrs) in _py_targets(targets).items():
    for path in _srcs(package, kind, attrs):
      owners.setdefault(path, set()).add(label)
  owners.setdefault(PYTEST_MAIN, set()).add('//tools/python:pytest_main.py')
  return owners


def _repo_modules():
  return {os.path.relpath(p, REPO_ROOT)
          for d in _source_dirs()
          for p in glob_lib.glob(os.path.join(REPO_ROOT, d, '*.py'))}


def test_every_python_directory_has_a_build_file():
  missing = [d or '.' for d in _source_dirs()
             if not os.path.exists(os.path.join(REPO_ROOT, d, 'BUILD'))]
  assert not missing, f'directories without a BUILD file: {missing}'


def test_every_module_has_a_target(targets):
  owners = _owners(targets)
  missing = sorted(m for m in _repo_modules() if m not in owners)
  assert not missing, ('modules that no py_library/py_binary/py_test lists in '
                       f'srcs: {missing}')


def test_named_files_exist(targets):
  missing = []
  for label, (package, kind, attrs) in targets.items():
    names = list(attrs.get('srcs') or []) + list(attrs.get('data') or [])
    names += [attrs['main']] if attrs.get('main') else []
    if kind in PY_RULES and not attrs.get('srcs'):
      names.append(attrs['name'] + '.py')
    for name in names:
      if name.startswith(('//', '@')) or (
          name.startswith(':') and name[1:] in {
              t[2]['name'] for t in targets.values() if t[0] == package}):
        continue
      if not os.path.exists(os.path.join(REPO_ROOT, _file_of(package, name))):
        missing.append(f'{label}: {name}')
  assert not missing, f'BUILD files name files that do not exist: {missing}'


def test_tests_and_entry_points_have_runnable_targets(targets):
  runnable = {}
  for label, (package, kind, attrs) in _py_targets(targets).items():
    if kind != 'py_library':
      runnable[_srcs(package, kind, attrs)[0]] = kind
  missing = []
  for module in sorted(_repo_modules() - {PYTEST_MAIN}):
    name = os.path.basename(module)
    with open(os.path.join(REPO_ROOT, module), encoding='utf-8') as f:
      is_main = "if __name__ == '__main__':" in f.read()
    if name.endswith('_test.py') or name.startswith('test_'):
      if runnable.get(module) not in ('py_test', 'py_pytest'):
        missing.append(f'{module} needs a py_pytest target')
    elif is_main and runnable.get(module) != 'py_binary':
      missing.append(f'{module} has a __main__ block: needs a py_binary')
  assert not missing, '; '.join(missing)


def _is_main_block(node):
  """True for `if __name__ == '__main__':`."""
  test = node.test if isinstance(node, ast.If) else None
  return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
          and test.left.id == '__name__' and len(test.comparators) == 1
          and getattr(test.comparators[0], 'value', None) == '__main__')


def _statements(body):
  """Every statement in BODY, at any nesting (imports are statements: the
  walk skips expressions, which are most of a module's nodes)."""
  for node in body:
    yield node
    for field in ('body', 'orelse', 'finalbody', 'handlers', 'cases'):
      children = getattr(node, field, None)
      if isinstance(children, list):
        yield from _statements(children)


def _imported_files(path, library=False):
  """Repository files that module PATH imports (at any nesting level).

  For a library, imports under `if __name__ == '__main__':` do not count:
  they run only in the module's py_binary, which must cover them.
  """
  with open(os.path.join(REPO_ROOT, path), encoding='utf-8') as f:
    tree = ast.parse(f.read(), path)
  if library:
    tree.body = [node for node in tree.body if not _is_main_block(node)]
  names = []
  for node in _statements(tree.body):
    if isinstance(node, ast.Import):
      names += [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      names += [f'{node.module}.{alias.name}' for alias in node.names]
      names.append(node.module)
  found = set()
  for name in names:
    base = os.path.join(*name.split('.'))
    for candidate in (base + '.py', os.path.join(base, '__init__.py')):
      if os.path.isfile(os.path.join(REPO_ROOT, candidate)):
        found.add(candidate)
  return found


def _transitive_deps(targets, label):
  """LABEL and every target it reaches through deps (what its runfiles get)."""
  seen, todo = set(), [label]
  while todo:
    current = todo.pop()
    if current in seen or current not in targets:
      continue
    seen.add(current)
    package, kind, attrs = targets[current]
    deps = list(attrs.get('deps', []))
    if kind == 'py_pytest':
      deps += [f':{n}' for n in IMPLICIT_PYTEST_DEPS]
    todo += [_target_label(package, d) for d in deps if not d.startswith('@')]
  return seen


def test_deps_cover_imports(targets):
  owners = _owners(targets)
  missing = []
  for label, (package, kind, attrs) in sorted(_py_targets(targets).items()):
    reachable = _transitive_deps(targets, label)
    for src in _srcs(package, kind, attrs):
      if not os.path.isfile(os.path.join(REPO_ROOT, src)):
        continue
      for imported in sorted(_imported_files(src, kind == 'py_library')):
        if imported.endswith('__init__.py'):
          continue
        if not owners.get(imported, set()) & reachable:
          missing.append(f'{label} imports {imported} but its deps do not '
                         f'reach {sorted(owners.get(imported, {"a target"}))}')
  assert not missing, 'missing deps:\n' + '\n'.join(missing)


def _local_targets(targets):
  """{label} of every rule plus {//pkg:file} of every file in a package."""
  found = set(targets)
  for package in SKIP_DIRS:  # data/ has a BUILD file of its own.
    if os.path.exists(os.path.join(REPO_ROOT, package, 'BUILD')):
      found |= {f'//{package}:{attrs["name"]}'
                for _, attrs in _read_build(package) if 'name' in attrs}
  for package in {t[0] for t in targets.values()}:
    base = os.path.join(REPO_ROOT, package)
    for dirpath, dirnames, filenames in os.walk(base):
      dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and
                     not os.path.exists(os.path.join(dirpath, d, 'BUILD'))]
      for name in filenames:
        rel = os.path.relpath(os.path.join(dirpath, name), base)
        found.add(f'//{package}:{rel}')
  return found


def _named_labels(targets):
  """(label of the naming target, attribute, full label named) of every dep
  and data entry that names something in this repository."""
  for label, (package, kind, attrs) in sorted(targets.items()):
    for attr in ('deps', 'data'):
      for name in attrs.get(attr) or []:
        if not name.startswith('@'):
          yield label, attr, _target_label(package, name)


def test_named_targets_exist(targets):
  known = _local_targets(targets)
  missing = [f'{label} {attr}: {named}'
             for label, attr, named in _named_labels(targets)
             if named not in known]
  assert not missing, 'labels that name no target or file:\n' + '\n'.join(
      missing)


def _visible(targets, named, user_package):
  """Whether target `named` is visible to a target of `user_package`."""
  package, _, _ = named[2:].partition(':')
  if package == user_package or named not in targets:
    return True  # Files: exports_files() decides (not checked here).
  visibility = targets[named][2].get('visibility')
  if visibility is None:
    visibility = _PACKAGE_DEFAULTS.get(package, [])
  for entry in visibility:
    if entry == '//visibility:public':
      return True
    scope, _, kind = entry[2:].partition(':')
    if kind == '__pkg__' and scope == user_package:
      return True
    if kind == '__subpackages__' and (
        user_package == scope or user_package.startswith(scope + '/')):
      return True
  return False


def test_named_targets_are_visible(targets):
  hidden = [f'{label} {attr}: {named}'
            for label, attr, named in _named_labels(targets)
            if not _visible(targets, named, label[2:].partition(':')[0])]
  assert not hidden, ('targets not visible to the target naming them (add '
                      'its package to their visibility):\n' +
                      '\n'.join(hidden))


def test_the_checks_catch_a_missing_or_hidden_target():
  targets = {'//a:lib': ('a', 'py_library', {'name': 'lib',
                                             'visibility': ['//b:__pkg__']}),
             '//b:user': ('b', 'py_library', {'name': 'user',
                                              'deps': ['//a:lib', '//a:nope']}),
             '//c/d:other': ('c/d', 'py_library', {'name': 'other',
                                                   'deps': ['//a:lib']})}
  assert _visible(targets, '//a:lib', 'b')
  assert not _visible(targets, '//a:lib', 'c/d')
  assert '//a:nope' not in _local_targets(targets)
  assert ('//b:user', 'deps', '//a:nope') in set(_named_labels(targets))


def test_pytest_skips_bazel_output_symlinks():
  config = configparser.ConfigParser()
  config.read(os.path.join(REPO_ROOT, 'pytest.ini'))
  norecurse = config.get('pytest', 'norecursedirs', fallback='').split()
  assert 'bazel-*' in norecurse, (
      'pytest.ini must keep bazel-* in norecursedirs: the bazel-* symlinks '
      'hold a second copy of every test.')


def _dependency_cycle(targets):
  """One cycle through deps and data as a list of labels, or None."""
  edges = {}
  for label, attr, named in _named_labels(targets):
    if named in targets:
      edges.setdefault(label, []).append(named)
  for label, (package, kind, attrs) in targets.items():
    if kind == 'py_pytest':
      edges.setdefault(label, []).extend(
          f'//{package}:{n}' for n in IMPLICIT_PYTEST_DEPS
          if f'//{package}:{n}' in targets)
  state, stack = {}, []

  def visit(label):
    state[label] = 'open'
    stack.append(label)
    for nxt in edges.get(label, ()):
      if state.get(nxt) == 'open':
        return stack[stack.index(nxt):] + [nxt]
      if nxt not in state:
        found = visit(nxt)
        if found:
          return found
    stack.pop()
    state[label] = 'done'
    return None

  for label in sorted(targets):
    if label not in state:
      found = visit(label)
      if found:
        return found
  return None


def test_no_dependency_cycle(targets):
  """Bazel refuses to analyse any target that reaches a cycle."""
  cycle = _dependency_cycle(targets)
  assert cycle is None, 'dependency cycle: ' + ' -> '.join(cycle)


def test_the_cycle_check_finds_a_cycle():
  fake = {'//a:x': ('a', 'py_library', {'name': 'x', 'deps': [':y']}),
          '//a:y': ('a', 'py_library', {'name': 'y', 'deps': ['//a:x']})}
  assert _dependency_cycle(fake) == ['//a:x', '//a:y', '//a:x']
