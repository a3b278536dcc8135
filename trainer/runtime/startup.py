"""What an entry point sets up before TensorFlow is imported, and its logs.

Entry points (trainer.main, trainer.legacy, verify_migration, the memory
report, the converter, the benchmarks) call `prepare(argv)` first thing;
library modules change nothing when imported.
  * Keras 2: on TensorFlow >= 2.16 with tf-keras installed,
    TF_USE_LEGACY_KERAS=1 (unless set), so tf.keras and tf.compat.v1.layers
    are tf-keras, as legacy model_fns need (Keras 3 has no
    tf.compat.v1.layers). TensorFlow reads it once, at its first import.
  * Quiet logs, unless the command line sets --verbosity (or -v): no
    C++ logs of TensorFlow but fatal ones (TF_CPP_MIN_LOG_LEVEL=3, unless
    set: at 2 a CPU machine still opens with `failed call to cuInit`; what
    TF's C++ reports as an error reaches Python as the exception, and the
    entry point prints that), library warnings off and, once TF's Python
    logger at warnings without deprecation notices
    (`quiet_tensorflow_logger()` again after anything that resets it).
    What a user reads stays: the entry point's own lines (start-up
    summary, one progress line per loop, results, warnings, the error).
    `prepare_program(argv)` is the launcher's: the same C++ quiet and only
    the libraries' warnings off; the program's own logging stays its own,
    but for the traceback TensorFlow's Coordinator logs with a failure it
    then re-raises (`Error reported to Coordinator`, under a strategy):
    the message stays, the traceback goes with the launcher's report.
  * `missing_keras()`: what to install when TF >= 2.16 lacks tf-keras,
    said in one line before an import fails deep inside the project.
"""

import importlib.metadata
import importlib.util
import logging
import os
import warnings

_quiet = []


def _tensorflow_version():
  for dist in ('tensorflow', 'tensorflow-cpu', 'tf-nightly', 'tensorflow-gpu'):
    try:
      return tuple(int(p) for p in importlib.metadata.version(dist).split(
          '.')[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
      continue
  return None


def has_real_estimator():
  """Whether this TensorFlow ships the real Estimator (<= 2.15 with
  tensorflow_estimator installed), from package metadata only: before
  TensorFlow is imported and without importing it."""
  version = _tensorflow_version()
  return bool(version and version < (2, 16) and
              importlib.util.find_spec('tensorflow_estimator') is not None)


def select_keras():
  """TF >= 2.16 with tf-keras installed: Keras 2 for legacy model code.
  Must run before TensorFlow is imported; an explicit setting is kept."""
  version = _tensorflow_version()
  if version is not None and version < (2, 16):
    return
  if 'TF_USE_LEGACY_KERAS' not in os.environ and (
      importlib.util.find_spec('tf_keras') is not None):
    os.environ['TF_USE_LEGACY_KERAS'] = '1'


def missing_keras():
  """What to install when this TensorFlow (>= 2.16) has no Keras 2 for
  legacy model code (tf-keras, the project's tfNNN extra) and tf-keras is
  not installed; None when nothing is missing. Reads package metadata
  only, before TensorFlow is imported."""
  version = _tensorflow_version()
  if version is None or version < (2, 16):
    return None
  if importlib.util.find_spec('tf_keras') is not None:
    return None
  minor = f'{version[0]}.{version[1]}'
  return (f'TensorFlow {minor} without tf-keras: legacy model code '
          '(get_variable models under the tf2 runner, tf.compat.v1.layers, '
          'the Estimator facade) needs Keras 2. Install the extra matching '
          f'your TensorFlow: pip install "tpu-trainer[tf{version[0]}'
          f'{version[1]}]" (or pip install "tf-keras~={minor}.0").')


_program_name = []  # Set by the installed package's console scripts.
HELP_FLAGS = ('-h', '-?', '--help', '--helpshort', '--helpfull')
_OTHERS_FLAGS = ('absl.', 'tensorflow', 'tf_keras', 'keras')


def set_program_name(name):
  """The name the user typed (a console script's), for usage lines."""
  _program_name[:] = [name]


def program_name(default):
  """The console script's name when one runs, else `default` (the
  `python -m ...` form)."""
  return _program_name[0] if _program_name else default


def wants_help(argv):
  """Whether argv asks for help (-h, --help, --helpshort, --helpfull)."""
  return any(a in HELP_FLAGS for a in argv[1:])


def print_help(argv, default_name, doc, flag_values):
  """Prints `doc` (its `python -m` name replaced by the script's own), a
  usage line naming the script, and the flags of the program's modules
  (--helpfull: absl's and TensorFlow's too) on stdout; returns 0, the exit
  status (absl's own --help exits 1 and lists only the main module's)."""
  name = program_name(default_name)
  full = '--helpfull' in argv[1:]
  print(f'usage: {name} [--flag=value ...]\n')
  print((doc or '').strip().replace(default_name, name) + '\n')
  modules = flag_values.flags_by_module_dict()
  for module in sorted(modules):
    if full or not module.startswith(_OTHERS_FLAGS):
      print(flag_values.module_help(module) + '\n')
  if not full:
    print(f'{name} --helpfull also lists absl\'s and TensorFlow\'s flags.')
  return 0


def parse_flags_first(argv, default_name, doc, flag_values):
  """An entry point's command line, parsed before it imports TensorFlow
  (its flags defined on `flag_values`, the global FLAGS): --help is
  answered (exit 0, print_help) and a flag error as absl's app.run says it
  (exit 1); --helpfull imports TensorFlow first, to list its flags too.
  Returns app.run's `flags_parser`, which hands it the parse's remaining
  arguments (absl's own flags, --flagfile and validators as app.run's)."""
  from absl import app  # pylint: disable=g-import-not-at-top
  if '--helpfull' in argv[1:]:
    importlib.import_module('tensorflow')
  app.define_help_flags()
  if wants_help(argv):
    raise SystemExit(print_help(argv, default_name, doc, flag_values))
  remaining = app.parse_flags_with_usage(argv)
  return lambda unused_argv: remaining


def wants_verbose(argv):
  """Whether the command line asks for absl's verbosity (--verbosity, -v)."""
  return any(a == '-v' or a.startswith(('--verbosity', '-v=', '--v='))
             for a in argv[1:])


def prepare(argv, quiet=True):
  """Keras 2 and (unless argv asks for verbosity) quiet TF logs; call before
  TensorFlow's first import. Returns whether logs are quiet."""
  select_keras()
  _quiet[:] = [quiet and not wants_verbose(argv)]
  if _quiet[0]:
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', QUIET_CPP_LOG_LEVEL)
    for category in (DeprecationWarning, FutureWarning):
      warnings.filterwarnings('ignore', category=category)
    quiet_tensorflow_logger()  # Its import-time notices too.
  return _quiet[0]


QUIET_CPP_LOG_LEVEL = '3'
# Libraries whose import-time notices (google.api_core's Python-version
# FutureWarning, TF's and Keras' deprecations) precede a program's output.
_LIBRARY_WARNINGS = r'(google|tensorflow|tf_keras|keras|absl|numpy|h5py)\b'


def prepare_program(argv):
  """The launcher's prepare(): Keras 2, TensorFlow's C++ logs quiet and
  the libraries' Python warnings off unless `argv` (the program's command
  line) asks for verbosity; the program's own warnings and logging are
  left as they are. Call before TensorFlow's first import."""
  select_keras()
  if wants_verbose(argv):
    return False
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', QUIET_CPP_LOG_LEVEL)
  for category in (DeprecationWarning, FutureWarning):
    warnings.filterwarnings('ignore', category=category,
                            module=_LIBRARY_WARNINGS)
  logger = logging.getLogger('tensorflow')
  if not any(isinstance(f, _CoordinatorTracebacks) for f in logger.filters):
    logger.addFilter(_CoordinatorTracebacks())
  return True


class _CoordinatorTracebacks(logging.Filter):
  """Keeps TensorFlow's `Error reported to Coordinator: ...` line but not
  the traceback it logs with it: the failure is re-raised, and reported
  (first) by the entry point, traceback included when it helps."""

  def filter(self, record):
    if record.exc_info and record.getMessage().startswith(
        'Error reported to Coordinator'):
      record.exc_info = None
      record.exc_text = None
    return True


class _DropDeprecations(logging.Filter):
  """TF's "... is deprecated (and will be removed)" notices."""

  def filter(self, record):
    return not (record.pathname.endswith('deprecation.py') or
                'is deprecated' in record.getMessage())


def quiet_tensorflow_logger():
  """After prepare(): TF's Python logger at warnings, without deprecation
  notices (per-step INFO lines of Estimator's hooks, session start-up)."""
  if not _quiet or not _quiet[0]:
    return
  logger = logging.getLogger('tensorflow')
  logger.setLevel(logging.WARNING)
  if not any(isinstance(f, _DropDeprecations) for f in logger.filters):
    logger.addFilter(_DropDeprecations())
