"""Model modules that define absl flags of their own, beside the trainer's.

Cloud-TPU-era model modules define flags at import time (mnist_tpu.py:
--tpu, --use_tpu, --data_dir, --learning_rate, ...; efficientnet's main.py
sixty more) and their model_fns read FLAGS. So an entry point imports the
modules that --model, --input, --eval_input, --predict_input and
--serving_input_fn name (found in argv and --flagfile files) BEFORE it
parses the command line, then defines its own flags by one rule:

  * a flag only the trainer defines is the trainer's;
  * a flag both define with the same value type (string, int, float, bool,
    list; an enum counts as a string) is ONE flag: the module's definition
    (default, help) stands, and the trainer reads the same value, checked
    with the trainer's own bounds or choices where the trainer uses it
    (e.g. --mode must be one of the trainer's modes; --optimizer is checked
    only for the built-in models, which are the only ones reading it).
    Unset on the command line, a module default that is None or that the
    trainer does not accept (resnet_main's --mode=train_and_eval) leaves
    the trainer its own default;
  * a flag both define as enums (or the module as an enum, the trainer as
    a string) where the module's refuses values the trainer's accepts
    (SimCLR's run.py: --mode in train|eval|train_then_eval; the trainer's
    train|evaluate|train_and_evaluate|...) is SPLIT, never merged: each
    reads its own view of the one command-line value. The module's code
    reads FLAGS.mode: the value if it is one of the module's, else the
    module's default; the trainer reads the value if it is one of its own,
    else (unset) the module's default where it accepts it, else its own
    default. A value set on the command line that only the module accepts
    (--mode=eval) is an error naming both definitions: the trainer cannot
    run it;
  * the same name with another value type is an error naming both
    definitions (FlagClashError), before anything runs, unless only the
    built-in models and inputs read the trainer's flag (BUILTIN_ONLY:
    resnet_main.py's int --resnet_depth against the built-in ResNet's enum):
    then the module's flag takes the name, the command line sets the
    module's, and params keep the trainer's default (logged).

A module that fails to import is reported later, by the entry point's own
resolution of the flag, naming it.
"""

import sys

from absl import flags
from absl import logging

from trainer import params as params_lib
from trainer.api import errors
from trainer.models import builtin
from trainer.models import registry

MODULE_FLAGS = ('model', 'input', 'eval_input', 'predict_input',
                'serving_input_fn')
# Flags only the built-in models and inputs read: a module's own flag of the
# same name is not held to the trainer's choices for them.
BUILTIN_ONLY = frozenset(builtin.hyperparameter_keys() + (
    'num_classes', 'image_size', 'image_channels', 'augmentation', 'cache',
    'shuffle_buffer', 'precision', 'num_slices', 'slice', 'optimizer',
    'learning_rate', 'lr_schedule', 'warmup_steps', 'lr_decay_steps',
    'lr_decay_factor', 'momentum', 'weight_decay', 'label_smoothing'))
_VALUE_TYPES = {'string enum': 'string', 'enum class': 'string'}
SHARED = {}  # {flag name: defining module} of the last define_shared.
YIELDED = {}  # {flag name: defining module}: built-in-only names taken.
SPLIT = {}  # {flag name: SplitFlag}: enums read apart (see above).


class FlagClashError(errors.TrainerError, ValueError):
  """A module defines a trainer flag's name with another value type."""


def module_specs(argv):
  """[(flag, spec)] of the module flags set in argv (flagfiles read)."""
  scratch = flags.FlagValues()
  for name in MODULE_FLAGS:
    flags.DEFINE_string(name, None, '', flag_values=scratch)
  try:
    scratch(list(argv), known_only=True)
  except flags.Error:
    return []  # The real parse reports it.
  return [(name, scratch[name].value) for name in MODULE_FLAGS
          if scratch[name].value]


def names_modules(argv):
  """Whether argv's module flags name a module of the user's
  (module:function), which may import TensorFlow (built-in names do not)."""
  return any(':' in spec for _, spec in module_specs(argv))


def import_modules(argv):
  """Imports the modules that argv's module flags name, so that the flags
  they define exist before parsing. Failures are left to the entry point.
  Built-in names import nothing (no TensorFlow before parsing)."""
  if not names_modules(argv):
    return
  from input_fn import inputs  # pylint: disable=g-import-not-at-top
  builtins = {'model': builtin.MODELS, 'input': inputs.INPUT_FNS,
              'eval_input': inputs.INPUT_FNS,
              'predict_input': inputs.INPUT_FNS, 'serving_input_fn': {}}
  for flag, spec in module_specs(argv):
    try:
      registry.import_module_of(spec, builtins[flag], flag)
    except Exception as e:  # pylint: disable=broad-except
      logging.info('--%s=%s does not import yet (%s); the entry point '
                   'reports it.', flag, spec, e)


def _value_type(flag):
  kind = flag.flag_type()
  return _VALUE_TYPES.get(kind, kind)


def _describe(flag_values, name):
  module = flag_values.find_module_defining_flag(name, default='?')
  flag = flag_values[name]
  return (f'{module} defines --{name} as {flag.flag_type()} (default '
          f'{flag.default!r})')


def _parses(parser, value):
  """(True, parsed) if `parser` accepts `value`, else (False, None)."""
  if value is None:
    return False, None
  try:
    return True, parser.parse(value)
  except (ValueError, TypeError):
    return False, None


def _values(parser):
  """A parser's accepted values, for messages: <a|b|c>, or its type."""
  choices = getattr(parser, 'enum_values', None)
  if choices:
    return f'enum <{"|".join(choices)}>'
  enum_class = getattr(parser, 'enum_class', None)
  if enum_class is not None:
    return f'enum <{"|".join(m.name for m in enum_class)}>'
  return parser.flag_type()


def _narrower(theirs, ours):
  """Whether the module's enum refuses a value the trainer's flag accepts
  (another choice set, or the trainer's flag is a free string)."""
  if not hasattr(theirs.parser, 'enum_values') and not hasattr(
      theirs.parser, 'enum_class'):
    return False
  choices = getattr(ours.parser, 'enum_values', None)
  if not choices:
    return True
  return not all(_parses(theirs.parser, c)[0] for c in choices)


class SplitFlag(flags.Flag):
  """A flag a model module and the trainer both define as enums of
  different values: one command-line value, two views. `value` (what
  FLAGS.<name> gives the module's code) is the module's; `trainer_value`
  the trainer's, which the config reads (params_lib.resolution)."""

  def __init__(self, theirs, ours, module, resolved):
    self.theirs, self.ours, self.module = theirs, ours, module
    self._resolved = resolved  # The FlagResolution the config reads.
    self.trainer_value = ours.default
    super().__init__(
        _UnionParser(theirs.parser, ours.parser), theirs.serializer,
        theirs.name, theirs.default, theirs.help + (
            f' (The trainer\'s --{theirs.name}, read apart: '
            f'{_values(ours.parser)}.)'),
        short_name=theirs.short_name, allow_override=theirs.allow_override,
        allow_overwrite=theirs.allow_overwrite)
    self.validators = list(theirs.validators) + list(ours.validators)

  @property
  def value(self):
    return self._value

  @value.setter
  def value(self, value):
    """Sets both views from `value` (the raw argument or a parsed one)."""
    ok, module_view = _parses(self.theirs.parser, value)
    self._value = module_view if ok else self.theirs.default
    ok, trainer_view = _parses(self.ours.parser, value)
    self.trainer_value = trainer_view if ok else self.ours.default
    self._resolved.yielded[self.name] = self.trainer_value

  def _parse(self, argument):
    self.parser.parse(argument)  # Refuses what neither accepts.
    return argument  # The setter parses it for each view.

  def parse(self, argument):
    """An explicit value: the trainer must accept it (it runs it)."""
    try:
      self.ours.parser.parse(argument)
    except (ValueError, TypeError) as e:
      if not _parses(self.theirs.parser, argument)[0]:
        raise flags.IllegalFlagValueError(
            f'flag --{self.name}={argument}: neither definition accepts '
            f'it: {self.describe()}.') from e
      raise flags.IllegalFlagValueError(
          f'flag --{self.name}={argument}: {argument!r} is only '
          f'{self.module}\'s value, not one the trainer can take: '
          f'{self.describe()}. Pass one of the trainer\'s values (the '
          f'module\'s FLAGS.{self.name} then keeps its default '
          f'{self.theirs.default!r} unless the value is also its own), or '
          f'rename the module\'s flag.') from e
    super().parse(argument)

  def flag_type(self):
    return self.theirs.flag_type()

  def describe(self):
    """Both definitions: module, file, values and defaults."""
    module = sys.modules.get(self.module)
    where = getattr(module, '__file__', None)
    where = f'{self.module} ({where})' if where else self.module
    return (f'{where} defines --{self.name} as {_values(self.theirs.parser)}'
            f' (default {self.theirs.default!r}) for its own code, the '
            f'trainer as {_values(self.ours.parser)} (default '
            f'{self.ours.default!r})')


class _UnionParser(flags.ArgumentParser):
  """Accepts what either definition accepts (the split flag's default and
  help); SplitFlag sorts the value into each view."""

  def __init__(self, theirs, ours):
    self.theirs, self.ours = theirs, ours

  def parse(self, argument):
    for parser in (self.theirs, self.ours):
      ok, value = _parses(parser, argument)
      if ok:
        return value
    raise ValueError(f'should be one of the module\'s {_values(self.theirs)}'
                     f' or the trainer\'s {_values(self.ours)}')

  def flag_type(self):
    return self.theirs.flag_type()


def _split(flag_values, name, theirs, ours):
  """Replaces the module's flag `name` by a SplitFlag; returns it."""
  module = flag_values.find_module_defining_flag(name, default='?')
  split = SplitFlag(theirs, ours, module, params_lib.resolution(flag_values))
  delattr(flag_values, name)
  flag_values[name] = split
  flag_values.register_flag_by_module(module, split)
  return split


def _accepts(ours):
  """Whether the trainer's flag `ours` accepts a value (bounds, choices)."""

  def accepts(value):
    try:
      ours.parser.parse(value)
    except (ValueError, TypeError):
      return False
    return True

  return accepts


def _checked_by_trainer(ours, theirs, shared_by):
  """A validator: the shared flag's value, when set, passes the trainer's
  own parser (bounds, choices)."""

  def check(value):
    if value is None or not theirs.present:
      return True
    try:
      ours.parser.parse(value)
    except (ValueError, TypeError) as e:
      raise flags.ValidationError(
          f'--{ours.name}={value!r}: the trainer needs {e} (the flag is '
          f'shared with {shared_by}).') from e
    return True

  return check


def define_shared(define_flags, flag_values=flags.FLAGS):
  """Defines the trainer's flags on flag_values by the rule above; returns
  {name: module} of the flags it shares with modules."""
  scratch = flags.FlagValues()
  define_flags(scratch, validate_on=flag_values)
  shared, yielded, split = {}, {}, {}
  resolved = params_lib.resolution(flag_values)
  resolved.yielded.clear()
  resolved.shared.clear()
  for name in list(scratch):
    ours = scratch[name]
    if name not in flag_values:
      flag_values[name] = ours
      flag_values.register_flag_by_module('flags', ours)
      continue
    theirs = flag_values[name]
    if _value_type(theirs) != _value_type(ours) and name in BUILTIN_ONLY:
      yielded[name] = flag_values.find_module_defining_flag(name, default='?')
      resolved.yielded[name] = ours.value
      continue
    if _value_type(theirs) != _value_type(ours):
      raise FlagClashError(
          f'--{name}: {_describe(flag_values, name)}, and the trainer '
          f'defines it as {ours.flag_type()}: rename one of them.')
    module = flag_values.find_module_defining_flag(name, default='?')
    shared[name] = module
    if name not in BUILTIN_ONLY and _narrower(theirs, ours):
      split[name] = _split(flag_values, name, theirs, ours)
      continue
    resolved.shared[name] = (ours.value, _accepts(ours))
    theirs.validators.extend(ours.validators)
    if name not in BUILTIN_ONLY:
      flags.register_validator(name, _checked_by_trainer(ours, theirs, module),
                               flag_values=flag_values)
  SHARED.clear()
  SHARED.update(shared)
  YIELDED.clear()
  YIELDED.update(yielded)
  SPLIT.clear()
  SPLIT.update(split)
  for name, flag in split.items():  # Unset: the default's two views.
    resolved.yielded[name] = flag.trainer_value
  return shared


def log_shared(flag_values=flags.FLAGS):
  """Logs the flags shared with model modules (call after parsing)."""
  plain = {n: m for n, m in SHARED.items() if n not in SPLIT}
  if plain:
    logging.info('Flags shared with model modules: %s.', ', '.join(
        f'--{n} ({m})' for n, m in sorted(plain.items())))
  for name, flag in sorted(SPLIT.items()):
    log = logging.info if flag.value == flag.trainer_value else (
        logging.warning)
    log('--%s is read apart: the trainer takes %r; %s reads FLAGS.%s = %r '
        '(%s).', name, flag.trainer_value, flag.module, name, flag.value,
        flag.describe())
  for name, module in sorted(YIELDED.items()):
    logging.info('--%s is %s\'s (another type than the trainer\'s); the '
                 'built-in models\' --%s keeps its default %r.', name, module,
                 name, params_lib.resolution(flag_values).yielded[name])


def define_all(argv, define_flags, flag_values=flags.FLAGS):
  """What an entry point calls before app.run: imports argv's model
  modules, then defines the trainer's flags beside theirs."""
  import_modules(argv)
  return define_shared(define_flags, flag_values)
