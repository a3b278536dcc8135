"""One migration: trace, plan the checkpoint, write OUT, convert, export,
compare, report. And `verify`: the comparison alone, on an existing OUT."""

import json
import os
import shutil
import tempfile

from absl import flags
from absl import logging
import tensorflow as tf

from trainer.api import errors
from trainer.migrate import builtin as builtin_lib
from trainer.migrate import codegen
from trainer.migrate import compare as compare_lib
from trainer.migrate import convert
from trainer.migrate import facts as facts_lib
from trainer.migrate import generated as generated_lib
from trainer.migrate import report as report_lib
from trainer.migrate import trace

FLAGS = flags.FLAGS
# Flags of the generated train.py: never taken over from the team's values.
_PROGRAM_FLAGS = frozenset(('model_dir', 'steps', 'eval_steps',
                            'iterations_per_loop', 'save_checkpoints_steps',
                            'keep_checkpoint_max', 'tpu', 'export'))
# Modules whose flags are not the team's.
_NOT_TEAM = ('absl', 'tensorflow', 'tf_keras', 'keras', 'flags', 'trainer',
             'model_fn', 'input_fn', '__main__', 'google', 'numpy')
_JSON_TYPES = (str, int, float, bool, type(None))


class OutputDirError(errors.TrainerError, ValueError):
  """--output_dir cannot take a new program."""


def _jsonable(value):
  if isinstance(value, _JSON_TYPES):
    return True
  if isinstance(value, (list, tuple)):
    return all(_jsonable(v) for v in value)
  if isinstance(value, dict):
    return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
  return False


def team_flags(flag_values=FLAGS):
  """{name: value} of the flags the team's modules define, as parsed."""
  result = {}
  for module, module_flags in flag_values.flags_by_module_dict().items():
    if module.split('.')[0] in _NOT_TEAM or module.endswith('migrate'):
      continue
    for flag in module_flags:
      if flag.name in _PROGRAM_FLAGS or not _jsonable(flag.value):
        continue
      if flag.present or flag.value != flag.default:
        result[flag.name] = (list(flag.value) if isinstance(
            flag.value, tuple) else flag.value)
  return dict(sorted(result.items()))


def program_params(params):
  """The params the generated program passes (JSON-able, no paths of this
  run: model_dir comes from train.py's flag)."""
  result = {k: v for k, v in sorted(params.items())
            if k != 'export_dir' and _jsonable(v)}
  result['model_dir'] = None  # train.py's --model_dir, set per run.
  return result


def settings(params):
  return {
      'TRAIN_STEPS': params['train_steps'],
      'EVAL_STEPS': params['eval_steps'] or -1,  # The trainer's 0: all.
      'ITERATIONS_PER_LOOP': params['iterations_per_loop'],
      'SAVE_CHECKPOINTS_STEPS': params['save_checkpoints_steps'] or 1000,
      'KEEP_CHECKPOINT_MAX': params['keep_checkpoint_max'] or 5,
      'EXPORT': True,
  }


def _command():
  """The command line of this run, as the user could type it again."""
  import shlex  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  args = [a for a in sys.argv[1:] if a != '--verify']
  return ' '.join(['python -m trainer.migrate'] +
                  [shlex.quote(a) for a in args])


def _without_export(out_dir, error):
  """train.py exports nothing by default: the model_fn does not build for
  an export (neither does it under Estimator's, which compare checks)."""
  path = os.path.join(out_dir, 'config.py')
  with open(path, encoding='utf-8') as f:
    text = f.read()
  text = text.replace('EXPORT = True\n', (
      '# The model_fn does not build for an export (params[\'batch_size\'] '
      'is\n# None there, as in Estimator\'s export): ' + error[:60] +
      '\nEXPORT = False\n'))
  with open(path, 'w', encoding='utf-8') as f:
    f.write(text)


_ESTIMATOR_ROOTS = ('tensorflow.python.estimator', 'tensorflow_estimator',
                    'tensorflow.python.tpu.tpu_estimator')


def _team_sources():
  """Source files of the modules imported from outside TensorFlow's and
  this project's trees and site-packages: the team's."""
  import sys  # pylint: disable=g-import-not-at-top
  repo = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  for module in list(sys.modules.values()):
    path = getattr(module, '__file__', None) or ''
    if not path.endswith('.py') or 'site-packages' in path or (
        path.startswith(repo + os.sep) or path.startswith(sys.prefix)):
      continue
    yield path


def estimator_paths():
  """The import paths of Estimator the team's modules name besides
  tf.estimator (e.g. `from tensorflow.python.estimator import estimator`);
  tf1_bridge publishes its names there too."""
  import ast  # pylint: disable=g-import-not-at-top
  paths = set()
  for path in _team_sources():
    try:
      with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
      continue
    for node in ast.walk(tree):
      names = []
      if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
      elif isinstance(node, ast.ImportFrom) and node.module:
        names = [node.module] + [f'{node.module}.{a.name}'
                                 for a in node.names]
      paths.update(n for n in names if n.startswith(_ESTIMATOR_ROOTS))
  return sorted(paths)


class Migration:
  """See the module docstring."""

  def __init__(self, params, model_fn, input_specs, input_fns,
               serving_input_fn, out_dir, compare_steps, compare_eval_steps):
    self._params = params
    self._model_fn = model_fn
    self._input_specs = input_specs
    self._input_fns = input_fns
    self._serving_input_fn = serving_input_fn
    self._out = out_dir
    self._steps = compare_steps
    self._eval_steps = compare_eval_steps

  def _checkpoint(self):
    path = tf.train.latest_checkpoint(self._params['model_dir'])
    if path is None:
      raise ValueError(f'--model_dir={self._params["model_dir"]} has no '
                       'checkpoint: train the Estimator first (or point '
                       'at its model_dir).')
    return path

  def _tracer(self):
    return trace.Tracer(self._model_fn, self._input_fns, self._params,
                        self._serving_input_fn)

  def migrate(self):
    """Writes OUT; its Report."""
    checkpoint = self._checkpoint()
    codegen.check_package_name(self._out)
    if os.path.exists(self._out) and os.listdir(self._out):
      raise OutputDirError(
          f'--output_dir={self._out} is not empty: trainer.migrate writes a '
          'new directory (move this one away, or compare it with --verify).')
    tracer = self._tracer()
    facts = tracer.trace()
    facts.model_spec, input_specs = builtin_lib.specs(self._params,
                                                      self._input_specs)
    facts.vendored = builtin_lib.is_builtin(self._params) or any(
        s.startswith('input_fn.') for s in input_specs.values())
    facts.params = program_params(self._params)
    facts.team_flags = team_flags()
    facts.checkpoint = checkpoint
    facts.step = int(tf.train.load_checkpoint(checkpoint).get_tensor(
        'global_step'))
    facts.estimator_paths = estimator_paths()
    _, absent = convert.plan(facts, checkpoint)  # Errors before writing.
    parent = os.path.dirname(self._out)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=os.path.basename(self._out) + '_',
                               dir=parent)
    try:
      lines = codegen.write(staging, facts, input_specs,
                            settings(self._params),
                            os.path.basename(self._out), _command())
      if facts.vendored:
        lines.update(builtin_lib.vendor(staging))
      # The package imports under its final name: move it there first.
      if os.path.exists(self._out):
        os.rmdir(self._out)
      os.rename(staging, self._out)
    except BaseException:
      shutil.rmtree(staging, ignore_errors=True)
      raise
    work = tempfile.mkdtemp(prefix='migrate-compare-')
    try:
      program = generated_lib.Program(self._out, self._params['seed'],
                                      os.path.join(work, 'build'))
      path, mapping = convert.convert(program.model, facts, checkpoint,
                                      self._out)
      logging.info('Converted %s into %s.', checkpoint, path)
      try:
        program.export()
      except Exception as e:  # pylint: disable=broad-except
        # Compared with the Estimator export, which must fail alike.
        program.export_error = f'{type(e).__name__}: {e}'.split('\n')[0]
        _without_export(self._out, program.export_error)
      report = self._compare(tracer, facts, checkpoint, program, work)
    finally:
      shutil.rmtree(work, ignore_errors=True)
    report.mapping = mapping
    report.absent = absent
    report.lines = lines
    report.write(os.path.join(self._out, 'report.json'))
    print(report_lib.mapping_table(mapping))
    return report

  def verify(self):
    """Compares OUT (as it is now) with the model_fn; its Report."""
    checkpoint = self._checkpoint()
    path = os.path.join(self._out, 'report.json')
    if not os.path.exists(path):
      raise OutputDirError(f'--output_dir={self._out} has no report.json: '
                           'it is not a trainer.migrate output.')
    with open(path, encoding='utf-8') as f:
      previous = json.load(f)
    facts = facts_lib.from_json(previous['facts'])
    tracer = self._tracer()
    work = tempfile.mkdtemp(prefix='migrate-verify-')
    try:
      program = generated_lib.Program(self._out, self._params['seed'],
                                      os.path.join(work, 'build'))
      _, mapping = convert.convert(program.model, facts, checkpoint, work)
      program.export_to(work)
      report = self._compare(tracer, facts, checkpoint, program, work)
    finally:
      shutil.rmtree(work, ignore_errors=True)
    report.mapping = mapping
    report.lines = previous.get('generated_lines', {})
    report.verified = True
    report.write(os.path.join(self._out, 'report.json'))
    return report

  def _compare(self, tracer, facts, checkpoint, program, work):
    comparison = compare_lib.Comparison(
        self._params, self._model_fn, tracer, self._input_fns, facts,
        checkpoint, work, self._steps, self._eval_steps,
        self._serving_input_fn)
    results = comparison.run(program)
    return report_lib.Report(facts, results)
