"""Writes the generated program from ModelFacts: templates with the model's
facts filled in (templates/*.tmpl, string.Template `$name` fields).

OUT/ is a Python package the team owns:
  __init__.py    its docstring: what was migrated, from where;
  model.py       the tf-keras Model (their model_fn wrapped, the rest TF2);
  optimizer.py   the tf-keras optimizer with the v1 update rule, if any;
  config.py      params, batch sizes, their flags' values at migration;
  tf1_bridge.py  the TF1 constructs still needed, each saying how to go;
  train.py       the program (absl flags, strategy, loop, checkpoints).
"""

import keyword
import os
import pprint
import string

from trainer.migrate import facts as facts_lib

_TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'templates')
_INDENT = '  '


def template(name):
  with open(os.path.join(_TEMPLATES, name), encoding='utf-8') as f:
    return string.Template(f.read())


def _bullets(constructs, empty):
  if not constructs:
    return f'  {empty}'
  lines = []
  for c in constructs:
    text = f'  * {c.construct} ({c.where})'
    if c.todo:
      text += f': {c.todo}'
    lines.extend(_wrap(text, '    '))
  return '\n'.join(lines)


def _wrap(text, indent, width=79):
  """`text` (with its leading spaces) in lines of at most `width`, the
  continuation lines starting with `indent`."""
  lead = text[:len(text) - len(text.lstrip(' '))]
  lines, line = [], lead
  for word in text.split():
    if line.strip() and len(line) + 1 + len(word) > width:
      lines.append(line)
      line = indent + word
    else:
      line = f'{line} {word}' if line.strip() else line + word
  lines.append(line)
  return lines


def call(head, arguments, indent, width=79):
  """`head(arg, ...)` on one line, or with the arguments aligned after the
  parenthesis (Google style), or on the next lines at indent + 4."""
  one = f'{indent}{head}({", ".join(arguments)})'
  if len(one) <= width:
    return [one]
  column = len(indent) + len(head) + 1
  lines, line = [], f'{indent}{head}('
  for i, argument in enumerate(arguments):
    piece = argument + (',' if i < len(arguments) - 1 else ')')
    if line.endswith('(') or len(line) + 1 + len(piece) <= width:
      line += ('' if line.endswith('(') else ' ') + piece
    else:
      lines.append(line)
      line = ' ' * column + piece
  lines.append(line)
  if all(len(l) <= width for l in lines):
    return lines
  inner = indent + '    '
  return [f'{indent}{head}('] + [
      f'{inner}{a}{"," if i < len(arguments) - 1 else ")"}'
      for i, a in enumerate(arguments)]


class TeamImport:
  """How generated code imports one module:function of the team's."""

  def __init__(self, spec):
    module, _, attr = spec.rpartition(':')
    self.spec, self.attr = spec, attr
    if module.endswith('.py'):
      self.path = os.path.abspath(module)
      self.module = os.path.splitext(os.path.basename(module))[0]
    else:
      self.path = None
      self.module = module
    self.alias = self.module.replace('.', '_')

  @property
  def statement(self):
    if self.path is None:
      if '.' in self.module:
        parent, _, leaf = self.module.rpartition('.')
        text = f'from {parent} import {leaf}'
        return text if leaf == self.alias else f'{text} as {self.alias}'
      return f'import {self.module}'
    return (f'{self.alias} = tf1_bridge.import_file({self.path!r})')

  @property
  def expression(self):
    return f'{self.alias}.{self.attr}'


def team_imports(facts, input_specs):
  """{spec: TeamImport} of the team's functions the program calls."""
  specs = [facts.model_spec] + list(input_specs) + (
      [facts.serving_spec] if facts.serving_spec else [])
  return {spec: TeamImport(spec) for spec in specs}


def _optimizer_init(facts):
  optimizer = facts.optimizer
  if optimizer is None:
    return (f'{_INDENT * 2}# The train_op runs as your model_fn builds it '
            '(tf1_bridge.ModelFn).\n'
            f'{_INDENT * 2}self.optimizer = None\n')
  arguments = dict(optimizer.hyperparameters)
  if optimizer.learning_rate is not None:
    arguments = {'learning_rate': optimizer.learning_rate, **arguments}
  arguments['name'] = optimizer.name
  origin = (f'tf.compat.v1.train.{optimizer.v1_class}' +
            (' in CrossShardOptimizer' if optimizer.cross_shard else ''))
  lines = _wrap(f'{_INDENT * 2}# {origin}, as a tf-keras optimizer with '
                'its TF1 update rule.', f'{_INDENT * 2}# ')
  lines += call(f'self.optimizer = {optimizer.keras_class}',
                [f'{k}={v!r}' for k, v in arguments.items()], _INDENT * 2)
  return '\n'.join(lines) + '\n'


def _ema_init(facts):
  if facts.ema is None:
    return ''
  return (f'{_INDENT * 2}# Your train_op\'s ExponentialMovingAverage '
          '(made by build_averages).\n'
          f'{_INDENT * 2}self.ema, self.averages = None, []\n')


def _metrics_init(facts):
  lines = [f'{_INDENT * 2}# Estimator\'s evaluation: the mean loss and your '
           'eval metrics,',
           f'{_INDENT * 2}# in the order your code calls '
           'tf.compat.v1.metrics (tf1_bridge).',
           f"{_INDENT * 2}self.eval_loss = tf_keras.metrics.Mean(name='loss')"]
  if not facts.metrics:
    lines.append(f'{_INDENT * 2}self.eval_metrics = []')
  else:
    lines.append(f'{_INDENT * 2}self.eval_metrics = [')
    for index, metric in enumerate(facts.metrics):
      name = metric.key or f'{metric.v1_name}_{index}'
      arguments = ''.join(f', {k}={v!r}' for k, v in
                          sorted(metric.arguments.items()))
      constructor = metric.keras or 'tf_keras.metrics.Mean'
      value = f'{constructor}(name={name!r}{arguments})'
      comment = (f'# tf.compat.v1.metrics.{metric.v1_name}' if metric.keras
                 else f'# NOT CONVERTED: tf.compat.v1.metrics.'
                 f'{metric.v1_name} (a placeholder; see the docstring)')
      lines.append(f'{_INDENT * 4}{comment}')
      entry = f'{_INDENT * 4}({metric.key!r}, {value}),'
      if len(entry) > 79:
        lines += [f'{_INDENT * 4}({metric.key!r},',
                  f'{_INDENT * 4} {value}),']
      else:
        lines.append(entry)
    lines.append(f'{_INDENT * 2}]')
  lines += [f'{_INDENT * 2}# TPUEstimatorSpec.host_call (function, tensors '
            'structure), which',
            f'{_INDENT * 2}# train.py runs on the host; set by train_step.',
            f'{_INDENT * 2}self.host_call_fn = self.host_call_structure = None']
  return '\n'.join(lines) + '\n'


def _train_apply(facts):
  lines = []
  if facts.optimizer is not None:
    lines.append(f'{_INDENT * 2}self.apply_gradients(recorder)')
  if facts.ema is not None:
    lines.append(f'{_INDENT * 2}self.apply_averages()')
  if not facts.host_call:
    lines.append(f'{_INDENT * 2}return spec.loss, ()')
    return '\n'.join(lines) + '\n'
  lines += [f'{_INDENT * 2}# TPUEstimatorSpec.host_call: train.py runs it on '
            'the host.',
            f'{_INDENT * 2}self.host_call_fn, tensors = spec.host_call',
            f'{_INDENT * 2}self.host_call_structure = tensors',
            f'{_INDENT * 2}return spec.loss, tensors']
  return '\n'.join(lines) + '\n'


def _apply_method(facts):
  optimizer = facts.optimizer
  if optimizer is None:
    return ''
  lines = [
      'def apply_gradients(self, recorder):',
      f'{_INDENT}"""Applies the gradients your model_fn passed to '
      f'{optimizer.v1_class}."""',
      f'{_INDENT}if recorder.optimizer is None:',
      f'{_INDENT * 2}raise ValueError(',
      f"{_INDENT * 4}'The model_fn no longer calls tf.compat.v1.train.'",
      f"{_INDENT * 4}'{optimizer.v1_class}.apply_gradients: re-run '",
      f"{_INDENT * 4}'trainer.migrate.')"]
  if optimizer.learning_rate is None:
    lines += [
        f'{_INDENT}# The learning rate your model_fn computed from '
        'global_step (TF1 code).',
        f'{_INDENT}self.optimizer.learning_rate = tf1_bridge.learning_rate(',
        f'{_INDENT * 4}recorder.optimizer, '
        f'{optimizer.learning_rate_attribute!r})']
  lines += [
      f'{_INDENT}# Estimator divided the loss by the replicas and summed '
      'their',
      f'{_INDENT}# gradients; tf_keras sums them: divide the gradients '
      'instead.',
      f'{_INDENT}grads_and_vars = tf1_bridge.scaled(recorder.grads_and_vars,',
      f'{" " * 36}1.0 / replicas())',
      f'{_INDENT}self.optimizer.apply_gradients(grads_and_vars)']
  if optimizer.steps_global_step:
    lines += [f'{_INDENT}# apply_gradients(..., global_step) stepped it in '
              'TF1.',
              f'{_INDENT}recorder.global_step.assign_add(1)']
  return '\n'.join(_INDENT + line if line else line for line in lines) + (
      '\n')


def _evaluate_body(facts):
  lines = [
      'recorder = tf1_bridge.Recorder(',
      f'{_INDENT * 2}metrics=[m for _, m in self.eval_metrics])',
      'spec = self.tf1(features, labels, EVAL, self.mode_params(EVAL),',
      f'{" " * 16}recorder=recorder)']
  if facts.eval_metrics_kind == 'eval_metrics':
    lines += [
        '# TPUEstimatorSpec.eval_metrics: your metric_fn, per batch.',
        'metric_fn, tensors = spec.eval_metrics',
        'with tf1_bridge.recording(recorder, self.global_step):',
        f'{_INDENT}if isinstance(tensors, dict):',
        f'{_INDENT * 2}metric_fn(**tensors)',
        f'{_INDENT}else:',
        f'{_INDENT * 2}metric_fn(*tensors)']
  lines.append('self.eval_loss.update_state(spec.loss)')
  return '\n'.join(_INDENT * 2 + line for line in lines) + '\n'


def _results_body(facts):
  del facts
  lines = ['for key, metric in self.eval_metrics:',
           f'{_INDENT}if key is not None:',
           f'{_INDENT * 2}results[key] = metric.result()']
  return '\n'.join(_INDENT * 2 + line for line in lines) + '\n'


def _ema_methods(facts):
  ema = facts.ema
  if ema is None:
    return '''
  def build_averages(self):
    """Nothing to build: the train_op keeps no moving averages."""

  def evaluation_weights(self):
    return contextlib.nullcontext()
'''
  updates = ', num_updates=self.global_step()' if (
      ema.num_updates == 'global_step') else ''
  selection = {
      'trainable': 'v.trainable',
      'trainable+moving': "v.trainable or name.rsplit('/', 1)[-1] in "
                          "('moving_mean', 'moving_variance')",
      'listed': 'name in config.EMA_VARIABLES'}[ema.rule]
  swap = '' if not ema.evaluate_with_averages else '''
  @contextlib.contextmanager
  def evaluation_weights(self):
    """Evaluation reads the moving averages, as your EVAL scaffold's
    Saver(ema.variables_to_restore()) restored them."""
    variables = self.averaged_variables()
    saved = [v.read_value() for v in variables]
    for variable, average in zip(variables, self.averages):
      variable.assign(average)
    try:
      yield
    finally:
      for variable, value in zip(variables, saved):
        variable.assign(value)
'''
  if not ema.evaluate_with_averages:
    swap = '''
  def evaluation_weights(self):
    return contextlib.nullcontext()
'''
  return f'''
  def averaged_variables(self):
    """The variables your train_op's EMA averaged."""
    return [v for name, v in sorted(self.variables_by_name().items())
            if {selection}]

  def build_averages(self):
    """tf.compat.v1.train.ExponentialMovingAverage({ema.decay!r}{
        ', num_updates=global_step' if updates else ''}) of your
    train_op, as tf.train.ExponentialMovingAverage; call once the
    variables exist."""
    if self.ema is not None:
      return
    self.ema = tf.train.ExponentialMovingAverage(
        {ema.decay!r}{updates}, zero_debias={ema.zero_debias!r})
    variables = self.averaged_variables()
    self.ema.apply(variables)  # Makes the averages (equal to the values).
    self.averages = [self.ema.average(v) for v in variables]

  def apply_averages(self):
    """After the optimizer's step, as your train_op's control
    dependencies ordered it."""
    if self.ema is not None:
      self.ema.apply(self.averaged_variables())
{swap}'''


def _serving_body(facts, imports):
  if not facts.signatures:
    return (f'{_INDENT * 2}return {{}}  # The model_fn builds no PREDICT '
            'mode.')
  inputs = sorted(facts.receiver, key=lambda r: r.placeholder_index)
  names = [r.key for r in inputs]
  plain = all(n.isidentifier() and not keyword.iskeyword(n) for n in names)
  arguments = ', '.join(names) if plain else '*inputs'
  values = f'[{", ".join(names)}]' if plain else 'list(inputs)'
  lines = ['specs = [']
  for r in inputs:
    shape = 'None' if r.shape is None else repr(list(r.shape))
    lines.append(f'{_INDENT * 2}tf.TensorSpec({shape}, tf.{r.dtype}, '
                 f'name={r.key!r}),')
  lines.append(']')
  if facts.receiver_kind == 'serving_input_fn':
    serving = imports[facts.serving_spec].expression
    build = ['# Your serving input function, its placeholders fed by the '
             'inputs.'] + [l.lstrip() if i == 0 else l[4:] for i, l in
                           enumerate(call('features = tf1_bridge.'
                                          'receiver_features',
                                          [serving, values], ' ' * 4))]
  elif len(inputs) == 1 and inputs[0].key == 'input':
    build = [f'features = {names[0] if plain else "inputs[0]"}']
  else:
    build = [f'features = dict(zip({names!r}, {values}))']
  lines += ['', 'def signature(name):', '',
            f'{_INDENT}def serve({arguments}):']
  lines += [f'{_INDENT * 2}{line}' for line in build]
  lines += [f'{_INDENT * 2}spec = self.tf1(features, None, PREDICT,',
            f'{" " * 20}self.mode_params(PREDICT, export=True))',
            f'{_INDENT * 2}return tf1_bridge.signature_outputs(spec, name)',
            '',
            f'{_INDENT}return tf.function(serve, input_signature=specs, '
            'autograph=False)',
            '',
            f'return {{name: signature(name) for name in '
            f'{[s.name for s in facts.signatures]!r}}}']
  return '\n'.join(_INDENT * 2 + line if line else '' for line in lines)


def model_py(facts, input_fns):
  imports = team_imports(facts, input_fns.values())
  model_fn = imports[facts.model_spec].expression
  team = sorted({item.statement for item in imports.values()})
  team_block = ['# Your modules (their flags are defined at import).'] + [
      s + '  # pylint: disable=g-import-not-at-top' for s in team]
  if facts.vendored:
    team_block = [
        '# The built-in model\'s code, copied into vendor/ (yours now).',
        'sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath('
        '__file__)),',
        "                                'vendor'))"] + team_block
  inputs = ['', '', '# Your input_fns, by mode (input_fn(params) -> '
            'tf.data.Dataset).', 'INPUT_FNS = {']
  for mode, spec in input_fns.items():
    key = {'train': 'TRAIN', 'eval': 'EVAL', 'infer': 'PREDICT'}[mode]
    inputs.append(f'    tf1_bridge.{key}: '
                  f'{imports[spec].expression},')
  inputs.append('}')
  optimizer_import = ''
  if facts.optimizer is not None:
    optimizer_import = (f'from .optimizer import '
                        f'{facts.optimizer.keras_class}\n')
  text = template('model.py.tmpl').substitute(
      model_spec=facts.model_spec,
      checkpoint=facts.checkpoint, step=facts.step,
      wrapped=_bullets(facts.of_kind('wrapped'), 'nothing'),
      converted=_bullets(facts.of_kind('converted'), 'nothing'),
      unconverted=_bullets(facts.of_kind('unconverted'), 'nothing'),
      optimizer_import=optimizer_import,
      estimator_paths=_literal('ESTIMATOR_PATHS',
                               tuple(facts.estimator_paths)).strip(),
      team_imports='\n'.join(team_block + inputs),
      model_fn=model_fn,
      optimizer_init=_optimizer_init(facts),
      ema_init=_ema_init(facts),
      metrics_init=_metrics_init(facts),
      train_apply=_train_apply(facts),
      apply_method=_apply_method(facts),
      evaluate_body=_evaluate_body(facts),
      results_body=_results_body(facts),
      ema_methods=_ema_methods(facts),
      serving_body=_serving_body(facts, imports),
      host_call_fn='')
  stdlib = 'import contextlib\n'
  if facts.vendored:
    stdlib += 'import os\nimport sys\n'
  text = text.replace('import tensorflow as tf\n',
                      f'{stdlib}\nimport tensorflow as tf\n', 1)
  return _tidy(text)


def _tidy(text):
  """No trailing spaces, at most two blank lines, one final newline."""
  lines = [line.rstrip() for line in text.splitlines()]
  result, blanks = [], 0
  for line in lines:
    blanks = blanks + 1 if not line else 0
    if blanks <= 2:
      result.append(line)
  return '\n'.join(result).rstrip('\n') + '\n'


def optimizer_py(facts):
  if facts.optimizer is None:
    return None
  blocks = _optimizer_blocks()
  body = blocks[facts.optimizer.v1_class]
  return _tidy(f'''"""{facts.optimizer.keras_class}: \
tf.compat.v1.train.{facts.optimizer.v1_class} as a tf-keras optimizer.

Generated by `python -m trainer.migrate`: TF1's update rule on tf-keras'
optimizer API, so training continues exactly where the Estimator stopped.
`slots(variable)` names each slot as TF1 did (the checkpoint converter
maps them). To move to tf_keras' own optimizer, expect slightly different
updates (see the class docstring) and re-verify.
"""

import tensorflow as tf
import tf_keras


{body}''')


def _optimizer_blocks():
  text = template('optimizers.py.tmpl').template
  blocks, name, lines = {}, None, []
  for line in text.splitlines():
    if line.startswith('#: '):
      if name:
        blocks[name] = '\n'.join(lines).strip() + '\n'
      name, lines = line[3:].strip(), []
    elif name:
      lines.append(line)
  if name:
    blocks[name] = '\n'.join(lines).strip() + '\n'
  return blocks


def bridge_py(facts):
  converted = [facts.optimizer.v1_class] if facts.optimizer else []
  return template('tf1_bridge.py.tmpl').substitute(
      converted_optimizers=repr(tuple(converted)))


def _literal(name, value):
  """`NAME = value` as Python source: one line, or one item per line."""
  text = repr(value)
  if len(name) + 3 + len(text) <= 79:
    return f'{name} = {text}\n'
  if isinstance(value, dict):
    items = [f'    {k!r}: {pprint.pformat(v, width=70)},'
             for k, v in sorted(value.items())]
    return f'{name} = {{\n' + '\n'.join(items) + '\n}\n'
  if isinstance(value, (list, tuple)):
    opening, closing = ('[', ']') if isinstance(value, list) else ('(', ')')
    items = [f'    {v!r},' for v in value]
    return f'{name} = {opening}\n' + '\n'.join(items) + f'\n{closing}\n'
  return f'{name} = {pprint.pformat(value, width=76)}\n'


def config_py(facts, settings):
  """settings: {NAME: value} of the program's defaults."""
  parts = [f'''"""What {facts.model_spec} was trained with: the params its \
model_fn and
input_fn were given, the program's defaults and your flags' values at
migration (train.py sets them as the flags' defaults).

Generated by `python -m trainer.migrate`; edit freely.
"""

''']
  for name, value in settings.items():
    parts.append(_literal(name, value))
  parts.append('\n# The params dict your model_fn and input_fn get (plus '
               'batch_size, use_tpu,\n# model_dir, mode and context, set '
               'per call).\n')
  parts.append(_literal('PARAMS', facts.params))
  parts.append('\n# Your flags (defined by your modules) and their values '
               'at migration.\n')
  parts.append(_literal('TEAM_FLAGS', facts.team_flags))
  if facts.ema is not None and facts.ema.rule == 'listed':
    parts.append('\n# The variables your train_op\'s moving average '
                 'covers.\n')
    parts.append(_literal('EMA_VARIABLES', sorted(facts.ema.variables)))
  return ''.join(parts)


def init_py(facts):
  return f'''"""{facts.model_spec}, migrated to TF2 by trainer.migrate.

From the checkpoint at global step {facts.step}:
{facts.checkpoint}
Run it with `python <this directory>/train.py --model_dir=DIR`; model.py is
the model, report.json what was compared.
"""
'''


def train_py(facts, team_modules, out_name):
  return template('train.py.tmpl').substitute(
      model_spec=facts.model_spec, out_name=out_name,
      team_modules=', '.join(team_modules))


def readme(facts, out_name, command):
  return f"""# {out_name}: {facts.model_spec} as a TF2 program

Written by trainer.migrate from {facts.checkpoint} (global step
{facts.step}); yours now. model.py says what is still TF1 and what is TF2;
report.json what was compared.

Train on (from checkpoint/ on the first start), evaluate, export:

    python {out_name}/train.py --model_dir=DIR --steps=N

After editing model.py, compare it with the model_fn again (from the
Estimator checkpoint; needs the project that generated it):

    {command} --verify

The command that wrote this directory:

    {command}
"""


def write(out_dir, facts, input_fns, settings, out_name, command=''):
  """Writes the generated sources into out_dir (to be renamed out_name);
  {file name: line count}."""
  imports = team_imports(facts, input_fns.values())
  modules = sorted({item.module for item in imports.values()})
  files = {
      '__init__.py': init_py(facts),
      'model.py': model_py(facts, input_fns),
      'config.py': config_py(facts, settings),
      'tf1_bridge.py': bridge_py(facts),
      'train.py': train_py(facts, modules, out_name),
      'README.md': readme(facts, out_name, command),
  }
  optimizer = optimizer_py(facts)
  if optimizer:
    files['optimizer.py'] = optimizer
  os.makedirs(out_dir, exist_ok=True)
  counts = {}
  for name, text in files.items():
    with open(os.path.join(out_dir, name), 'w', encoding='utf-8') as f:
      f.write(text)
    if name.endswith('.py'):  # Lines of code.
      counts[name] = text.count('\n')
  return counts


def check_package_name(out_dir):
  """ValueError unless OUT's name can be imported as a package."""
  name = os.path.basename(os.path.abspath(out_dir))
  if not name.isidentifier() or keyword.iskeyword(name):
    raise ValueError(
        f'--output_dir={out_dir}: its last component {name!r} must be a '
        'Python identifier (train.py imports the directory as a package).')
  return name


CONVERTED = facts_lib.CONVERTED_OPTIMIZERS
