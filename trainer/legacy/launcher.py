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

import collections
import importlib.util
import json
import os
import runpy
import sys

from trainer.api import errors
from trainer.runtime import startup

USAGE = """\
usage: python -m trainer.legacy [--cpu_fallback] [--peer_timeout_secs=N]
                               (PROGRAM.py | -m MODULE) [ARGS...]

Runs a legacy tf.estimator / TPUEstimator program unchanged; on TensorFlow
without Estimator (>= 2.16) its Estimator calls run on the facade: on one
device on the graph engine (a TF1 graph and a Session, as Estimator), under
a multi-replica or TPU strategy or a cluster of workers on the tf2 runner.

launcher flags (before the program):
  --cpu_fallback  a TPUClusterResolver that finds no TPU means "no TPU": the
                  program runs on CPU/GPU (logged) instead of failing
  --peer_timeout_secs=N
                  a TF_CONFIG job of chief/workers (MultiWorkerMirrored-
                  Strategy): a worker silent for N s counts as lost and the
                  others stop with an error naming it (default 10)
  -h, --help      this message
"""
DEFAULT_PEER_TIMEOUT_SECS = 10

# What parse() found: launcher options, then the program and its argv.
Launch = collections.namedtuple(
    'Launch', 'cpu_fallback kind target program_args peer_timeout_secs')
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
  """Launch(cpu_fallback, kind, target, program_args, peer_timeout_secs)
  from the launcher's argv.

  kind is 'path' or 'module'. Raises UsageError naming the problem.
  """
  args = list(argv[1:])
  cpu_fallback = False
  peer_timeout = DEFAULT_PEER_TIMEOUT_SECS
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
    elif arg.startswith('--peer_timeout_secs='):
      value = arg.split('=', 1)[1]
      if not value.isdigit():
        raise UsageError(f'--peer_timeout_secs={value}: give whole seconds '
                         '(0: TensorFlow\'s default, 10 s).')
      peer_timeout = int(value)
    elif arg == '-m':
      if i + 1 >= len(args):
        raise UsageError('-m needs a module name (-m their.package.main).')
      return Launch(cpu_fallback, 'module', args[i + 1], args[i + 2:],
                    peer_timeout)
    elif arg.startswith('-'):
      raise UsageError(
          f'unknown launcher flag {arg!r}; launcher flags (--cpu_fallback, '
          '--peer_timeout_secs) come before the program, the program\'s own '
          'flags after it.')
    else:
      return Launch(cpu_fallback, 'path', arg, args[i + 1:], peer_timeout)
    i += 1
  raise UsageError('no program given: name a script (their_main.py) or a '
                   'module (-m their.package.main).')


def _say(message):
  print(f'trainer.legacy: {message}', file=sys.stderr, flush=True)


def _prepare(cpu_fallback, peer_timeout_secs):
  """Installs the facade (TF >= 2.16), --cpu_fallback and the peer timeout
  of a chief/worker job; says what it did."""
  startup.select_keras()
  if not startup.wants_verbose(sys.argv):  # TF 2.21 logs every placement.
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '1')
  # pylint: disable=g-import-not-at-top  (after the Keras choice)
  import tensorflow as tf
  from trainer.compat import cpu_fallback as cluster
  from trainer.facade import install
  if install.install() or install.installed():
    _say(f'TensorFlow {tf.__version__} has no tf.estimator: the program\'s '
         'Estimator calls run on the trainer.legacy facade: on one device on '
         'the graph engine (as Estimator), under a multi-replica or TPU '
         'strategy or across TF_CONFIG workers on the tf2 runner.')
  else:
    _say(f'TensorFlow {tf.__version__} has tf.estimator: running the real '
         'Estimator unchanged.')
  if cpu_fallback:
    cluster.install_fallback()
  _configure_peers(peer_timeout_secs)


def _configure_peers(timeout_secs):
  """Before the program makes its MultiWorkerMirroredStrategy: a lost peer
  fails the others after `timeout_secs`. Not for jobs with parameter
  servers (Estimator's own distributed training, no coordination service)."""
  raw = os.environ.get('TF_CONFIG', '')
  try:
    has_ps = bool(json.loads(raw).get('cluster', {}).get('ps')) if raw else False
  except (ValueError, AttributeError):
    return  # The program's own TF_CONFIG error is clearer.
  if has_ps:
    return
  from trainer.runtime import tf_config  # pylint: disable=g-import-not-at-top
  tf_config.configure_peer_timeout(timeout_secs)


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
    launch = parse(argv)
    if launch.kind == 'path' and not os.path.isfile(launch.target):
      raise UsageError(f'program file {launch.target} does not exist.')
    _prepare(launch.cpu_fallback, launch.peer_timeout_secs)
    _run(launch.kind, launch.target, launch.program_args)
  except UsageError as e:
    print(f'trainer.legacy: error: {e}\n{USAGE}', file=sys.stderr, end='')
    return 2
  except errors.TrainerError as e:  # Its message says what to do.
    print(f'trainer.legacy: error: {e}', file=sys.stderr)
    return 1
  return 0
