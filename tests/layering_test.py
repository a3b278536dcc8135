"""The project's modules import in one direction, and importing changes
nothing.

Reads every module of the project (trainer/, model_fn/, input_fn/,
flags.py) and its imports, function-level ones and
`importlib.import_module('literal')` included, and checks:
  * the module import graph has no cycle;
  * the layers hold: the spec types (trainer.api) import no other project
    package; library packages (runners, guard, compat, model_fn, input_fn)
    never import the facade (trainer.facade) or an entry point; only entry
    points install the facade (trainer.facade.install);
  * only trainer/compat imports TF's private modules (tensorflow.python,
    tf_keras.src, ...);
  * importing every library module in a fresh TF >= 2.16 interpreter
    leaves `tf.estimator` absent (no import-time patching; the estimator
    runner, which needs the real one, and the facade are not imported).
"""

import ast
import collections
import os
import subprocess
import sys

import pytest

from tests import testutil

# The real source tree (under Bazel too, as build_files_test: not runfiles).
ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
PACKAGES = ('trainer', 'model_fn', 'input_fn')
# Entry points: what a user runs; they may install the facade.
ENTRY_POINTS = {'trainer.main', 'trainer.verify_migration',
                'trainer.legacy.__main__', 'trainer.legacy.launcher',
                'trainer.memory.__main__', 'trainer.runners.native.convert'}
# Library layers, lowest first: a module of a layer imports only its own
# layer and lower ones (project modules; not tests, bench or scripts).
LAYERS = [
    ('trainer.api', 'trainer.config', 'trainer.compat.tf_private'),
    # The object-based checkpoint's step key: written by the native runner,
    # read by the loop whatever runner wrote the checkpoint.
    ('trainer.compat', 'trainer.runtime.startup',
     'trainer.runtime.tpu_cluster', 'trainer.runtime.profiling',
     'trainer.runtime.progress', 'trainer.runtime.tf_config',
     'trainer.runtime.checkpoints', 'trainer.runtime.predictions',
     'trainer.runtime.eval_summaries'),
    ('model_fn', 'input_fn', 'flags', 'trainer.params', 'trainer.models',
     'trainer.user_flags'),
    ('trainer.guard', 'trainer.runtime', 'trainer.facade.engine.graph',
     'trainer.memory'),
    ('trainer.runners.tf2', 'trainer.runners.native',
     'trainer.runners.estimator'),
    ('trainer.runners',),
    ('trainer.facade', 'trainer.legacy'),
]


def _modules():
  """{module name: file path} of the project's Python modules."""
  found = {'flags': os.path.join(ROOT, 'flags.py')}
  for top in PACKAGES:
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
      dirnames[:] = [d for d in dirnames if d != '__pycache__']
      for name in filenames:
        if name.endswith('.py'):
          path = os.path.join(dirpath, name)
          module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
          found[module.removesuffix('.__init__')] = path
  return found


def _imported_names(tree):
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
      # `from pkg import mod` names pkg.mod; `from mod import name`, mod.
      yield from (f'{node.module}.{alias.name}' for alias in node.names)
    elif (isinstance(node, ast.Call) and node.args and
          isinstance(node.args[0], ast.Constant) and
          isinstance(node.args[0].value, str) and
          getattr(node.func, 'attr', getattr(node.func, 'id', None)) ==
          'import_module'):
      yield node.args[0].value


# (tensorflow.core holds the protocol buffers, a stable wire format.)
_PRIVATE_TF = ('tensorflow.python', 'tensorflow.compiler', 'tensorflow.tsl',
               'tf_keras.src', 'keras.src')


def _private_tf_imports():
  """{module: sorted private TF modules it imports}."""
  found = {}
  for module, path in _modules().items():
    with open(path) as f:
      names = set(_imported_names(ast.parse(f.read(), path)))
    private = sorted(n for n in names if n.startswith(_PRIVATE_TF))
    if private:
      found[module] = private
  return found


def _graph():
  """{module: set of project modules it imports}."""
  modules = _modules()

  def resolve(name):
    while name and name not in modules:
      name = name.rpartition('.')[0]
    return name

  graph = {}
  for module, path in modules.items():
    with open(path) as f:
      tree = ast.parse(f.read(), path)
    graph[module] = {resolve(n) for n in _imported_names(tree)} - {'', module}
  return graph


def _cycle(graph):
  """One import cycle as a list of modules, or None."""
  state = {}  # module -> 1 (on the path) or 2 (done)
  path = []

  def visit(module):
    state[module] = 1
    path.append(module)
    for dep in sorted(graph.get(module, ())):
      if state.get(dep) == 1:
        return path[path.index(dep):] + [dep]
      if dep not in state:
        found = visit(dep)
        if found:
          return found
    path.pop()
    state[module] = 2
    return None

  for module in sorted(graph):
    if module not in state:
      found = visit(module)
      if found:
        return found
  return None


def _layer(module):
  for index, prefixes in enumerate(LAYERS):
    if any(module == p or module.startswith(p + '.') for p in prefixes):
      return index
  return None


def test_every_library_module_has_a_layer():
  unplaced = [m for m in _graph() if _layer(m) is None and
              m not in ENTRY_POINTS and m != 'trainer']
  assert not unplaced, f'give these a layer in LAYERS: {unplaced}'


def test_no_import_cycle():
  cycle = _cycle(_graph())
  assert cycle is None, 'import cycle: ' + ' -> '.join(cycle)


def test_imports_go_down_the_layers():
  upward = []
  for module, deps in sorted(_graph().items()):
    if module in ENTRY_POINTS or module == 'trainer':
      continue
    for dep in sorted(deps):
      if dep in ENTRY_POINTS or (dep != 'trainer' and
                                 _layer(dep) > _layer(module)):
        upward.append(f'{module} -> {dep}')
  assert not upward, 'imports of a higher layer:\n' + '\n'.join(upward)


def test_only_entry_points_install_the_facade():
  installers = sorted(m for m, deps in _graph().items()
                      if 'trainer.facade.install' in deps and
                      not m.startswith('trainer.facade') and
                      m not in ENTRY_POINTS)
  assert not installers, installers


def test_only_compat_touches_tf_internals():
  outside = {m: names for m, names in _private_tf_imports().items()
             if not m.startswith('trainer.compat.')}
  assert not outside, f'move these into trainer/compat: {outside}'
  assert 'trainer.compat.tf_private' in _private_tf_imports()


def test_the_checks_catch_a_cycle_and_an_upward_import():
  assert _cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
  assert _cycle({'a': {'b'}, 'b': set()}) is None
  assert _layer('trainer.api.specs') < _layer('trainer.runners.tf2.runner')
  assert _layer('trainer.runners.tf2.runner') < _layer(
      'trainer.facade.estimator')
  tree = ast.parse(
      'import importlib\n'
      'def f():\n  importlib.import_module("trainer.runners.tf2.runner")')
  assert 'trainer.runners.tf2.runner' in set(_imported_names(tree))


_PROBE = """
import importlib, sys
import tensorflow as tf
for name in sys.argv[1:]:
  importlib.import_module(name)
assert 'estimator' not in dir(tf), 'tf.estimator appeared'
assert not hasattr(tf.compat.v1, 'estimator'), 'tf.compat.v1.estimator appeared'
print('ok', len(sys.argv) - 1)
"""


@pytest.mark.skipif(testutil.HAS_ESTIMATOR, reason=(
    'TF <= 2.15 has tf.estimator of its own'))
def test_importing_library_modules_patches_nothing():
  library = sorted(m for m in _graph() if m not in ENTRY_POINTS and
                   not m.startswith(('trainer.legacy', 'trainer.facade',
                                     'trainer.runners.estimator')) and
                   not m.endswith('__main__'))
  result = subprocess.run(
      [sys.executable, '-c', _PROBE, *library], cwd=ROOT,
      capture_output=True, text=True, timeout=testutil.HANG_TIMEOUT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.split() == ['ok', str(len(library))]
