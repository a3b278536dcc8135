"""The project's modules import in one direction, and importing changes
nothing.

Reads every module of the project (trainer/, model_fn/, input_fn/,
flags.py) and its imports, function-level ones and
`importlib.import_module('literal')` included, and checks:
  * the module import graph has no cycle, and neither has the graph of its
    packages (trainer/api, trainer/compat, trainer/runtime, ..., model_fn,
    input_fn; a module directly in trainer/ counts as a package of its own);
  * the layers hold (LAYERS, lowest first; docs/layout.md lists them):
    compat and api, model code, the runtime, the configuration, the engines,
    what the front ends run (the runner registry and the facade), and the
    front ends (ENTRY_POINTS) on top. A module imports its own layer and
    lower ones only, never an entry point; the runner registry and the
    facade never import each other; only entry points install the facade
    (trainer.facade.install);
  * trainer/ keeps few loose modules: the entry points and the
    configuration (LOOSE_MODULES); everything else lives in a package;
  * the runtime imports no input_fn/ (NO_INPUT_FN), and trainer.main, the
    runners, engines, runtime, guard and memory report read no setting
    from a params dict (TYPED_CONFIG): they read the typed Config;
  * only trainer/compat touches TensorFlow's internals: no other module of
    the project, scripts/, bench/ or tools/ imports TF's private modules
    (tensorflow.python, tf_keras.src, ...) or reads a `_`-prefixed
    attribute of TensorFlow (on `tf.`/`tensorflow.` expressions, names
    assigned from them, or a known private member of TF objects:
    PRIVATE_TF_MEMBERS), getattr/hasattr/setattr with such names included;
  * importing every library module in a fresh TF >= 2.16 interpreter
    leaves `tf.estimator` absent (no import-time patching; the estimator
    runner, which needs the real one, and the facade are not imported).
No module is an exception to any of these.
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
# Entry points, the front ends: what a user runs (modules, or packages:
# every module in them); they may install the facade and import any layer.
ENTRY_POINTS = ('trainer.main', 'trainer.verify_migration', 'trainer.legacy',
                'trainer.migrate', 'trainer.memory.__main__',
                'trainer.runners.native.convert')
# Layers, lowest first (/work/plan/LAYOUT.md's, in the order the code
# imports them: the runtime and the guard read model_fn/input_fn's record
# format and serving preprocessing, so those sit below them). A module of a
# layer imports only its own layer and lower ones. Packages and the
# configuration modules only: no per-module exception.
LAYERS = [
    ('trainer.api', 'trainer.compat'),
    ('model_fn', 'input_fn'),
    ('trainer.runtime', 'trainer.guard'),
    ('flags', 'trainer.config', 'trainer.params', 'trainer.user_flags',
     'trainer.models', 'trainer.memory'),
    ('trainer.engines',),
    ('trainer.runners', 'trainer.facade'),
]
# The libraries of the front ends: trainer.main's runners (--runner) and
# the tf.estimator facade; each reaches the engines on its own.
FRONT_END_LIBRARIES = ('trainer.runners', 'trainer.facade')
# The only modules directly in trainer/: entry points and configuration.
LOOSE_MODULES = {'__init__.py', 'main.py', 'verify_migration.py',
                 'config.py', 'params.py', 'user_flags.py'}
# Packages that never import input_fn/: what an input needs (its checks,
# evaluation steps, serving signature) the front end passes down
# (trainer/models/inputs.py).
NO_INPUT_FN = ('trainer.runtime',)
# Packages that read the project's settings from the typed Config they are
# given, never from a params dict (made only at the model_fn/input_fn call;
# the facade's user params are the user's, trainer/models/builtin.py's
# helpers model code's).
TYPED_CONFIG = ('trainer.main', 'trainer.runners', 'trainer.runtime',
                'trainer.engines', 'trainer.guard', 'trainer.memory')
# Besides the library: what else is checked for private TF access.
OTHER_SOURCES = ('scripts', 'bench', 'tools')


def _python_files(tops):
  """{module name: file path} of the Python files under the `tops` dirs."""
  found = {}
  for top in tops:
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
      dirnames[:] = [d for d in dirnames if d != '__pycache__']
      for name in filenames:
        if name.endswith('.py'):
          path = os.path.join(dirpath, name)
          module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, '.')
          found[module.removesuffix('.__init__')] = path
  return found


def _modules():
  """{module name: file path} of the project's Python modules."""
  return {'flags': os.path.join(ROOT, 'flags.py'), **_python_files(PACKAGES)}


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


def _other_sources():
  """{module name: file path} of scripts/, bench/ and tools/."""
  return _python_files(OTHER_SOURCES)


def _checked_sources():
  """Every source checked for private TF access, but trainer/compat's."""
  return {m: p for m, p in {**_modules(), **_other_sources()}.items()
          if not (m == 'trainer.compat' or m.startswith('trainer.compat.'))}


def _private_tf_imports(sources):
  """{module: sorted private TF modules it imports}."""
  found = {}
  for module, path in sources.items():
    with open(path) as f:
      names = set(_imported_names(ast.parse(f.read(), path)))
    private = sorted(n for n in names if n.startswith(_PRIVATE_TF))
    if private:
      found[module] = private
  return found


_TF_MODULES = ('tensorflow', 'tf_keras', 'keras')
# `_`-prefixed members of TF objects that trainer/compat reads (each behind
# a named function there): anywhere else, reading one is a private access
# whatever the object's name.
PRIVATE_TF_MEMBERS = frozenset((
    '_ResourceSummaryWriter', '_StopAfterNEvalsHook', '_TPUInferenceContext',
    '_USE_EQUALITY', '_add_train_op', '_address', '_as_graph_element',
    '_checkpoint_dir', '_collections', '_current_learning_rate',
    '_evaluate_once', '_every_secs', '_every_steps',
    '_get_control_flow_context', '_get_default_variable_store',
    '_get_or_create_eval_step', '_get_or_create_global_step_read', '_handle',
    '_init_from_checkpoint', '_is_loss_scaled_by_optimizer', '_last_step',
    '_listeners', '_make_callable_from_options', '_max_to_keep',
    '_num_steps', '_numpy', '_read_variable_op', '_reshape', '_saved_model',
    '_saver', '_scaffold', '_scale_loss_for_estimator_enabled',
    '_set_attr', '_set_checkpoint_initializer', '_set_control_flow_context',
    '_sharded', '_shared_name', '_timer', '_values', '_var_list'))


def _is_private(name):
  return name.startswith('_') and not name.startswith('__')


def _root(node):
  """The Name at the root of an attribute/call/subscript chain, or None."""
  while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
    node = node.func if isinstance(node, ast.Call) else node.value
  return node.id if isinstance(node, ast.Name) else None


def _tf_names(tree):
  """Names bound to TensorFlow: imports of it, and names assigned from an
  expression rooted at one (`graph = tf.compat.v1.get_default_graph()`)."""
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names |= {(a.asname or a.name).split('.')[0] for a in node.names
                if a.name.split('.')[0] in _TF_MODULES}
    elif isinstance(node, ast.ImportFrom) and node.module and (
        node.module.split('.')[0] in _TF_MODULES):
      names |= {a.asname or a.name for a in node.names}
  changed = True
  while changed:
    changed = False
    for node in ast.walk(tree):
      if isinstance(node, ast.Assign) and _root(node.value) in names:
        for target in node.targets:
          if isinstance(target, ast.Name) and target.id not in names:
            names.add(target.id)
            changed = True
  return names


def private_tf_accesses(source, path='<source>'):
  """[(line, expression)] of `_`-prefixed TensorFlow attributes `source`
  reads, writes or names in getattr/hasattr/setattr/delattr."""
  tree = ast.parse(source, path)
  tf_names = _tf_names(tree)
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Attribute) and _is_private(node.attr):
      root = _root(node.value)
      if root in ('self', 'cls'):
        continue  # The object's own members (a subclass's included).
      if root in tf_names or node.attr in PRIVATE_TF_MEMBERS:
        found.append((node.lineno, ast.unparse(node)))
    elif (isinstance(node, ast.Call) and
          getattr(node.func, 'id', None) in (
              'getattr', 'hasattr', 'setattr', 'delattr') and
          len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and
          isinstance(node.args[1].value, str) and
          _is_private(node.args[1].value)):
      root = _root(node.args[0])
      if root in ('self', 'cls'):
        continue
      if root in tf_names or node.args[1].value in PRIVATE_TF_MEMBERS:
        found.append((node.lineno, ast.unparse(node)))
  return sorted(found)


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


def _within(module, prefix):
  return module == prefix or module.startswith(prefix + '.')


def _is_entry_point(module):
  return any(_within(module, e) for e in ENTRY_POINTS)


def _layer(module):
  for index, prefixes in enumerate(LAYERS):
    if any(_within(module, p) for p in prefixes):
      return index
  return None


def _package(module):
  """The package a module belongs to in the package graph: trainer/'s
  subpackage (trainer.runtime for trainer.runtime.loop), model_fn,
  input_fn; a module directly in trainer/ (and flags) is its own."""
  parts = module.split('.')
  if parts[0] == 'trainer' and len(parts) > 2:
    return '.'.join(parts[:2])
  if parts[0] == 'trainer' and len(parts) == 2 and not os.path.isfile(
      os.path.join(ROOT, 'trainer', parts[1] + '.py')):
    return module  # A subpackage's __init__.
  return module if parts[0] == 'trainer' else parts[0]


def _package_graph(graph):
  """{package: set of other packages its modules import}."""
  packages = collections.defaultdict(set)
  for module, deps in graph.items():
    packages[_package(module)] |= {_package(d) for d in deps}
  return {p: deps - {p} for p, deps in packages.items()}


def test_every_library_module_has_a_layer():
  unplaced = [m for m in _graph() if _layer(m) is None and
              not _is_entry_point(m) and m != 'trainer']
  assert not unplaced, f'give these a layer in LAYERS: {unplaced}'


def test_no_import_cycle():
  cycle = _cycle(_graph())
  assert cycle is None, 'import cycle: ' + ' -> '.join(cycle)


def test_no_package_import_cycle():
  cycle = _cycle(_package_graph(_graph()))
  assert cycle is None, 'packages import each other: ' + ' -> '.join(cycle)


def test_imports_go_down_the_layers():
  upward = []
  for module, deps in sorted(_graph().items()):
    if _is_entry_point(module) or module == 'trainer':
      continue
    for dep in sorted(deps):
      if _is_entry_point(dep) or (dep != 'trainer' and
                                  _layer(dep) > _layer(module)):
        upward.append(f'{module} -> {dep}')
  assert not upward, 'imports of a higher layer:\n' + '\n'.join(upward)


def _front_end_crossings(graph):
  """['a -> b'] of imports between two FRONT_END_LIBRARIES (entry points,
  which may import both, excepted)."""
  return sorted(
      f'{m} -> {d}' for m, deps in graph.items() for d in deps
      for a in FRONT_END_LIBRARIES for b in FRONT_END_LIBRARIES
      if a != b and _within(m, a) and _within(d, b) and
      not _is_entry_point(m))


def test_front_end_libraries_do_not_import_each_other():
  crossing = _front_end_crossings(_graph())
  assert not crossing, 'front-end libraries import each other:\n' + (
      '\n'.join(crossing))


def _input_fn_imports(graph):
  """['a -> b'] of imports of input_fn from the NO_INPUT_FN packages."""
  return sorted(f'{m} -> {d}' for m, deps in graph.items() for d in deps
                if any(_within(m, p) for p in NO_INPUT_FN) and
                _within(d, 'input_fn'))


def test_the_runtime_imports_no_input_fn():
  found = _input_fn_imports(_graph())
  assert not found, ('pass what the input needs down from the front end '
                     '(trainer/models/inputs.py):\n' + '\n'.join(found))


def _is_params(node):
  name = node.attr if isinstance(node, ast.Attribute) else getattr(
      node, 'id', '')
  return name.lstrip('_').endswith('params')


def params_reads(source, settings, path='<source>'):
  """[(line, expression)] of `source`'s reads of a setting (a name in
  `settings`) from a params dict: `params['key']`, `self._params['key']`,
  `params.get('key')` (writes, the model_fn contract's, are no reads)."""
  found = []
  for node in ast.walk(ast.parse(source, path)):
    if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
        and _is_params(node.value) and isinstance(node.slice, ast.Constant)
        and node.slice.value in settings):
      found.append((node.lineno, ast.unparse(node)))
    elif (isinstance(node, ast.Call) and
          isinstance(node.func, ast.Attribute) and node.func.attr == 'get'
          and _is_params(node.func.value) and node.args and
          isinstance(node.args[0], ast.Constant) and
          node.args[0].value in settings):
      found.append((node.lineno, ast.unparse(node)))
  return sorted(found)


def _settings():
  from trainer import config  # pylint: disable=g-import-not-at-top
  return frozenset(config.KEYS)


def test_the_lower_layers_read_settings_from_the_config():
  settings = _settings()
  found = {}
  for module, path in sorted(_modules().items()):
    if any(_within(module, p) for p in TYPED_CONFIG):
      with open(path) as f:
        reads = params_reads(f.read(), settings, path)
      if reads:
        found[module] = reads
  assert not found, ('read these from the trainer.config.Config passed '
                     f'down: {found}')


def test_the_config_checks_catch_an_input_fn_import_and_a_params_read():
  assert _input_fn_imports({'trainer.runtime.modes': {'input_fn.tfrecord'},
                            'trainer.models.inputs': {'input_fn.tfrecord'}}
                           ) == ['trainer.runtime.modes -> input_fn.tfrecord']
  source = ('def f(params, self):\n'
            '  a = params["model_dir"]\n'
            '  b = self._params.get("seed")\n'
            '  params["batch_size"] = 1\n'
            '  c = params["a_user_key"]\n'
            '  return config.model_dir\n')
  assert params_reads(source, _settings()) == [
      (2, "params['model_dir']"), (3, "self._params.get('seed')")]


def test_only_entry_points_install_the_facade():
  installers = sorted(m for m, deps in _graph().items()
                      if 'trainer.facade.install' in deps and
                      not _within(m, 'trainer.facade') and
                      not _is_entry_point(m))
  assert not installers, installers


def test_trainer_keeps_few_loose_modules():
  loose = {n for n in os.listdir(os.path.join(ROOT, 'trainer'))
           if n.endswith('.py')}
  assert loose <= LOOSE_MODULES, (
      f'put {sorted(loose - LOOSE_MODULES)} in a package of trainer/ '
      '(docs/layout.md)')
  assert len(loose) < 8


def test_only_compat_imports_tf_internals():
  outside = _private_tf_imports(_checked_sources())
  assert not outside, f'move these into trainer/compat: {outside}'
  compat = {m: p for m, p in _modules().items()
            if _within(m, 'trainer.compat')}
  assert 'trainer.compat.tf_private' in _private_tf_imports(compat)


def test_only_compat_reads_private_tf_attributes():
  found = {}
  for module, path in sorted(_checked_sources().items()):
    with open(path) as f:
      accesses = private_tf_accesses(f.read(), path)
    if accesses:
      found[module] = accesses
  assert not found, ('give each a named function in trainer/compat: '
                     f'{found}')


def test_compat_reads_private_tf_attributes():
  """The check sees what compat does (it would see it anywhere else)."""
  path = os.path.join(ROOT, 'trainer', 'compat', 'tf_private.py')
  with open(path) as f:
    found = private_tf_accesses(f.read(), path)
  assert any('_scale_loss_for_estimator_enabled' in e for _, e in found)


def test_the_checks_catch_a_cycle_and_an_upward_import():
  assert _cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
  assert _cycle({'a': {'b'}, 'b': set()}) is None
  assert _layer('trainer.api.specs') < _layer('trainer.engines.tf2.engine')
  assert _layer('trainer.engines.tf2.engine') < _layer(
      'trainer.facade.estimator')
  assert _layer('trainer.runtime.loop') < _layer('trainer.runners.registry')
  assert _layer('trainer.runtime.loop') < _layer(
      'trainer.engines.graph.program') < _layer('trainer.facade.estimator')
  assert _is_entry_point('trainer.legacy.launcher')
  assert _is_entry_point('trainer.migrate')
  assert _front_end_crossings({
      'trainer.runners.registry': {'trainer.facade.estimator'},
      'trainer.runners.native.convert': {'trainer.facade.install'},
      'trainer.facade.estimator': {'trainer.engines.graph.engine'}}) == [
          'trainer.runners.registry -> trainer.facade.estimator']
  assert not _is_entry_point('trainer.facade.install')
  tree = ast.parse(
      'import importlib\n'
      'def f():\n  importlib.import_module("trainer.engines.tf2.engine")')
  assert 'trainer.engines.tf2.engine' in set(_imported_names(tree))


def test_the_package_graph_catches_a_cycle_of_packages():
  graph = {'trainer.api.specs': {'trainer.compat.tf_private'},
           'trainer.compat.estimator_names': {'trainer.api.errors'},
           'trainer.compat.tf_private': set(), 'trainer.api.errors': set()}
  assert _cycle(graph) is None  # No module cycle...
  assert _cycle(_package_graph(graph)) in (  # ...but a package cycle.
      ['trainer.api', 'trainer.compat', 'trainer.api'],
      ['trainer.compat', 'trainer.api', 'trainer.compat'])
  assert _package('trainer.runtime.loop') == 'trainer.runtime'
  assert _package('trainer.config') == 'trainer.config'
  assert _package('model_fn.native.layers') == 'model_fn'


def test_the_private_attribute_check_catches_tf_internals():
  source = (
      'import tensorflow as tf\n'
      'from tensorflow.compat import v1\n'
      'graph = tf.compat.v1.get_default_graph()\n'
      'a = tf.compat.v1.train.Saver._something\n'
      'b = graph._last_id\n'
      'c = getattr(graph, "_is_loss_scaled_by_optimizer", False)\n'
      'd = v1._private\n'
      'def f(saver, op):\n'
      '  op._set_attr("x", None)\n'
      '  return saver._var_list, saver.__class__, self._mine\n'
      'e = spec._replace(mode=1)\n')
  found = [e for _, e in private_tf_accesses(source)]
  assert found == ['tf.compat.v1.train.Saver._something', 'graph._last_id',
                   "getattr(graph, '_is_loss_scaled_by_optimizer', False)",
                   'v1._private', 'op._set_attr', 'saver._var_list'], found


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
  # The estimator runner needs the real Estimator; the facade is what
  # entry points install.
  library = sorted(m for m in _graph() if not _is_entry_point(m) and
                   not _within(m, 'trainer.facade') and
                   not _within(m, 'trainer.runners.estimator') and
                   not m.endswith('__main__'))
  result = subprocess.run(
      [sys.executable, '-c', _PROBE, *library], cwd=ROOT,
      capture_output=True, text=True, timeout=testutil.HANG_TIMEOUT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.split() == ['ok', str(len(library))]
