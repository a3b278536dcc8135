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
  * the same name with another value type is an error naming both
    definitions (FlagClashError), before anything runs, unless only the
    built-in models and inputs read the trainer's flag (BUILTIN_ONLY:
    resnet_main.py's int --resnet_depth against the built-in ResNet's enum):
    then the module's flag takes the name, the command line sets the
    module's, and params keep the trainer's default (logged).

A module that fails to import is reported later, by the entry point's own
resolution of the flag, naming it.
"""

from absl import flags
from absl import logging

from trainer import params as params_lib
from trainer import registry
from trainer.api import errors

MODULE_FLAGS = ('model', 'input', 'eval_input', 'predict_input',
                'serving_input_fn')
# Flags only the built-in models and inputs read: a module's own flag of the
# same name is not held to the trainer's choices for them.
BUILTIN_ONLY = frozenset((
    'num_classes', 'image_size', 'image_channels', 'augmentation', 'cache',
    'shuffle_buffer', 'mlp_hidden_units', 'resnet_depth', 'resnet_stem',
    'precision', 'num_slices', 'slice', 'optimizer', 'learning_rate',
    'lr_schedule', 'warmup_steps', 'lr_decay_steps', 'lr_decay_factor',
    'momentum', 'weight_decay', 'label_smoothing'))
_VALUE_TYPES = {'string enum': 'string', 'enum class': 'string'}
SHARED = {}  # {flag name: defining module} of the last define_shared.
YIELDED = {}  # {flag name: defining module}: built-in-only names taken.


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


def import_modules(argv):
  """Imports the modules that argv's module flags name, so that the flags
  they define exist before parsing. Failures are left to the entry point."""
  from input_fn import inputs  # pylint: disable=g-import-not-at-top
  from model_fn import models  # pylint: disable=g-import-not-at-top
  builtins = {'model': models.MODEL_FNS, 'input': inputs.INPUT_FNS,
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
  shared, yielded = {}, {}
  params_lib.YIELDED_TO_MODULES.clear()
  params_lib.SHARED_WITH_MODULES.clear()
  for name in list(scratch):
    ours = scratch[name]
    if name not in flag_values:
      flag_values[name] = ours
      flag_values.register_flag_by_module('flags', ours)
      continue
    theirs = flag_values[name]
    if _value_type(theirs) != _value_type(ours) and name in BUILTIN_ONLY:
      yielded[name] = flag_values.find_module_defining_flag(name, default='?')
      params_lib.YIELDED_TO_MODULES[name] = ours.value
      continue
    if _value_type(theirs) != _value_type(ours):
      raise FlagClashError(
          f'--{name}: {_describe(flag_values, name)}, and the trainer '
          f'defines it as {ours.flag_type()}: rename one of them.')
    module = flag_values.find_module_defining_flag(name, default='?')
    shared[name] = module
    params_lib.SHARED_WITH_MODULES[name] = (ours.value, _accepts(ours))
    theirs.validators.extend(ours.validators)
    if name not in BUILTIN_ONLY:
      flags.register_validator(name, _checked_by_trainer(ours, theirs, module),
                               flag_values=flag_values)
  SHARED.clear()
  SHARED.update(shared)
  YIELDED.clear()
  YIELDED.update(yielded)
  return shared


def log_shared():
  """Logs the flags shared with model modules (call after parsing)."""
  if SHARED:
    logging.info('Flags shared with model modules: %s.', ', '.join(
        f'--{n} ({m})' for n, m in sorted(SHARED.items())))
  for name, module in sorted(YIELDED.items()):
    logging.info('--%s is %s\'s (another type than the trainer\'s); the '
                 'built-in models\' --%s keeps its default %r.', name, module,
                 name, params_lib.YIELDED_TO_MODULES[name])


def define_all(argv, define_flags, flag_values=flags.FLAGS):
  """What an entry point calls before app.run: imports argv's model
  modules, then defines the trainer's flags beside theirs."""
  import_modules(argv)
  return define_shared(define_flags, flag_values)
