"""python -m trainer.legacy: runs a legacy Estimator program unchanged.

  python -m trainer.legacy [--cpu_fallback] path/to/their_main.py [their flags]
  python -m trainer.legacy [--cpu_fallback] -m their.package.main [their flags]

Launcher flags come before the program; everything after the program is its
own command line (sys.argv as `python their_main.py ...` would give it, the
script's directory first on sys.path), parsed by its own absl flags and
app.run. On TensorFlow without Estimator (>= 2.16) the Estimator facade is
installed first (tf-keras selected as Keras 2 when installed, before
TensorFlow is imported); on TF <= 2.15 nothing changes, so the same command
gives the real TPUEstimator's reference run. --cpu_fallback works on both.
"""

import importlib.util
import os
import runpy
import sys

from trainer import startup
from trainer.api import errors

USAGE = """\
usage: python -m trainer.legacy [--cpu_fallback] (PROGRAM.py | -m MODULE) [ARGS...]

Runs a legacy tf.estimator / TPUEstimator program unchanged; on TensorFlow
without Estimator (>= 2.16) its Estimator calls run on the tf2 runner.

launcher flags (before the program):
  --cpu_fallback  a TPUClusterResolver that finds no TPU means "no TPU": the
                  program runs on CPU/GPU (logged) instead of failing
  -h, --help      this message
"""
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# From a clone, the repository root stays importable once sys.path[0] is the
# program's directory. Installed (tpu_trainer.trainer.legacy, setup.py), the
# package is importable from site-packages, and its root, which holds the
# generic names trainer/ and flags.py, must not go on sys.path.
_FROM_CLONE = __name__.split('.')[0] == 'trainer'


class UsageError(errors.TrainerError):
  """A bad launcher command line; the message says what is wrong."""


def parse(argv):
  """(cpu_fallback, kind, target, program_args) from the launcher's argv.

  kind is 'path' or 'module'. Raises UsageError naming the problem.
  """
  args = list(argv[1:])
  cpu_fallback = False
  i = 0
  while i < len(args):
    arg = args[i]
    if arg in ('-h', '--help'):
      raise SystemExit(print(USAGE, end='') or 0)
    if arg in ('--cpu_fallback', '--cpu_fallback=true', '--cpu_fallback=1'):
      cpu_fallback = True
    elif arg in ('--nocpu_fallback', '--cpu_fallback=false',
                 '--cpu_fallback=0'):
      cpu_fallback = False
    elif arg == '-m':
      if i + 1 >= len(args):
        raise UsageError('-m needs a module name (-m their.package.main).')
      return cpu_fallback, 'module', args[i + 1], args[i + 2:]
    elif arg.startswith('-'):
      raise UsageError(
          f'unknown launcher flag {arg!r}; launcher flags (--cpu_fallback) '
          'come before the program, the program\'s own flags after it.')
    else:
      return cpu_fallback, 'path', arg, args[i + 1:]
    i += 1
  raise UsageError('no program given: name a script (their_main.py) or a '
                   'module (-m their.package.main).')


def _say(message):
  print(f'trainer.legacy: {message}', file=sys.stderr, flush=True)


def _prepare(cpu_fallback):
  """Installs the facade (TF >= 2.16) and --cpu_fallback; says what it did."""
  startup.select_keras()
  if not startup.wants_verbose(sys.argv):  # TF 2.21 logs every placement.
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')
  # pylint: disable=g-import-not-at-top  (after the Keras choice)
  import tensorflow as tf
  from trainer.legacy import cluster
  from trainer.legacy import install
  if install.install() or install.installed():
    _say(f'TensorFlow {tf.__version__} has no tf.estimator: the program\'s '
         'Estimator calls run on the tf2 runner (trainer.legacy facade).')
  else:
    _say(f'TensorFlow {tf.__version__} has tf.estimator: running the real '
         'Estimator unchanged.')
  if cpu_fallback:
    cluster.install_fallback()


def _run(kind, target, program_args):
  if kind == 'path':
    sys.argv = [target] + program_args
    sys.path[0] = os.path.dirname(os.path.abspath(target))
    if _FROM_CLONE and REPO_ROOT not in sys.path:
      sys.path.append(REPO_ROOT)
    runpy.run_path(target, run_name='__main__')
    return
  try:
    spec = importlib.util.find_spec(target)
  except (ImportError, ValueError) as e:
    raise UsageError(f'cannot import module {target!r}: {e}') from e
  if spec is None:
    raise UsageError(f'cannot import module {target!r}: no such module on '
                     'sys.path (run from its root or set PYTHONPATH).')
  sys.argv = [spec.origin or target] + program_args
  runpy.run_module(target, run_name='__main__', alter_sys=True)


def main(argv):
  """Runs the program argv names; returns an exit status (2: usage error)."""
  try:
    cpu_fallback, kind, target, program_args = parse(argv)
    if kind == 'path' and not os.path.isfile(target):
      raise UsageError(f'program file {target} does not exist.')
    _prepare(cpu_fallback)
    _run(kind, target, program_args)
  except UsageError as e:
    print(f'trainer.legacy: error: {e}\n{USAGE}', file=sys.stderr, end='')
    return 2
  except errors.TrainerError as e:  # Its message says what to do.
    print(f'trainer.legacy: error: {e}', file=sys.stderr)
    return 1
  return 0
