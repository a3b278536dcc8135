"""python -m trainer.legacy: runs a legacy Estimator program unchanged.

  python -m trainer.legacy [--cpu_fallback] path/to/their_main.py [their flags]
  python -m trainer.legacy [--cpu_fallback] -m their.package.main [their flags]

Launcher flags come before the program; everything after the program is its
own command line (sys.argv as `python their_main.py ...` would give it, the
script's directory first on sys.path), parsed by its own absl flags and
app.run. On TensorFlow without Estimator (>= 2.16) the Estimator facade is
installed first (tf-keras selected as Keras 2 when installed, before
TensorFlow is imported); on TF <= 2.15 the real Estimator runs, so the same
command gives the reference run. On both, the program's Estimator.train /
evaluate get the trainer's guarantees (trainer/guard/estimator_guard.py:
one writer per model_dir, recovery of an interrupted save, a checkpoint
and exit 143 / 130 on SIGTERM / SIGINT, one error line for a full or
read-only model_dir) and its TFRecord files are checked for a cut inside a
record; --cpu_fallback works on both. Whatever the program raises, the
first line on stderr names the cause and the fix (trainer/runtime/
failures.py; the program's own exceptions keep their traceback after it),
exit 1; its own sys.exit(N) stays N.
"""

import collections
import functools
import importlib.util
import json
import os
import runpy
import signal
import sys

from trainer.api import errors
from trainer.runtime import failures
from trainer.runtime import startup

USAGE = """\
usage: python -m trainer.legacy [--cpu_fallback] [--peer_timeout_secs=N]
                               [--ps_timeout_secs=N]
                               [--skip_corrupt_records]
                               (PROGRAM.py | -m MODULE) [ARGS...]

Runs a legacy tf.estimator / TPUEstimator program unchanged; on TensorFlow
without Estimator (>= 2.16) its Estimator calls run on the facade: on one
device on the graph engine (a TF1 graph and a Session, as Estimator), under
a multi-replica or TPU strategy or a cluster of workers on the tf2 runner.

launcher flags (before the program):
  --cpu_fallback  a TPUClusterResolver that finds no TPU means "no TPU": the
                  program runs on CPU/GPU (logged) instead of failing, as
                  on a TPU of one core (cross_replica_sum, which its
                  CrossShardOptimizer calls, is the identity)
  --peer_timeout_secs=N
                  a TF_CONFIG job whose program makes a MultiWorkerMirrored-
                  Strategy: a worker silent for N s counts as lost and the
                  others stop with an error naming it (default 10)
  --ps_timeout_secs=N
                  a TF_CONFIG job with "ps" tasks: a ps unreachable for N s
                  stops the training tasks with an error naming it (default
                  60; 0: wait for it forever, as Estimator does)
  --skip_corrupt_records
                  read TFRecord files cut inside a record up to the cut (by
                  default such a file is refused, naming it and the offset)
  -h, --help      this message
"""
DEFAULT_PEER_TIMEOUT_SECS = 10
DEFAULT_PS_TIMEOUT_SECS = 60

# What parse() found: launcher options, then the program and its argv.
Launch = collections.namedtuple(
    'Launch', 'cpu_fallback kind target program_args peer_timeout_secs '
    'ps_timeout_secs skip_corrupt_records',
    defaults=(DEFAULT_PS_TIMEOUT_SECS, False))
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# From a clone, the repository root stays importable once sys.path[0] is the
# program's directory. Installed (tpu_trainer.trainer.legacy, setup.py), the
# package is importable from site-packages, and its root, which holds the
# generic names trainer/ and flags.py, must not go on sys.path.
_FROM_CLONE = __name__.split('.')[0] == 'trainer'


class UsageError(errors.TrainerError):
  """A bad launcher command line; the message says what is wrong."""


class MissingDependencyError(errors.TrainerError, ImportError):
  """A package the program needs on this TensorFlow is not installed."""


def parse(argv):
  """Launch(cpu_fallback, kind, target, program_args, peer_timeout_secs,
  skip_corrupt_records) from the launcher's argv.

  kind is 'path' or 'module'. Raises UsageError naming the problem.
  """
  args = list(argv[1:])
  cpu_fallback = False
  skip = False
  peer_timeout = DEFAULT_PEER_TIMEOUT_SECS
  ps_timeout = DEFAULT_PS_TIMEOUT_SECS
  i = 0
  while i < len(args):
    arg = args[i]
    if arg in startup.HELP_FLAGS:
      raise SystemExit(print(USAGE.replace(
          'python -m trainer.legacy',
          startup.program_name('python -m trainer.legacy')), end='') or 0)
    if arg in ('--cpu_fallback', '--cpu_fallback=true', '--cpu_fallback=1'):
      cpu_fallback = True
    elif arg in ('--nocpu_fallback', '--cpu_fallback=false',
                 '--cpu_fallback=0'):
      cpu_fallback = False
    elif arg in ('--skip_corrupt_records', '--skip_corrupt_records=true',
                 '--skip_corrupt_records=1'):
      skip = True
    elif arg.startswith('--peer_timeout_secs='):
      value = arg.split('=', 1)[1]
      if not value.isdigit():
        raise UsageError(f'--peer_timeout_secs={value}: give whole seconds '
                         '(0: TensorFlow\'s default, 10 s).')
      peer_timeout = int(value)
    elif arg.startswith('--ps_timeout_secs='):
      value = arg.split('=', 1)[1]
      if not value.isdigit():
        raise UsageError(f'--ps_timeout_secs={value}: give whole seconds '
                         '(0: wait for a lost ps forever).')
      ps_timeout = int(value)
    elif arg == '-m':
      if i + 1 >= len(args):
        raise UsageError('-m needs a module name (-m their.package.main).')
      return Launch(cpu_fallback, 'module', args[i + 1], args[i + 2:],
                    peer_timeout, ps_timeout, skip)
    elif arg.startswith('-'):
      raise UsageError(
          f'unknown launcher flag {arg!r}; launcher flags (--cpu_fallback, '
          '--peer_timeout_secs, --ps_timeout_secs, --skip_corrupt_records) '
          'come before the program, the program\'s own flags after it.')
    else:
      return Launch(cpu_fallback, 'path', arg, args[i + 1:], peer_timeout,
                    ps_timeout, skip)
    i += 1
  raise UsageError('no program given: name a script (their_main.py) or a '
                   'module (-m their.package.main).')


def _say(message):
  print(f'trainer.legacy: {message}', file=sys.stderr, flush=True)


def _prepare(cpu_fallback, peer_timeout_secs,
             ps_timeout_secs=DEFAULT_PS_TIMEOUT_SECS,
             skip_corrupt_records=False):
  """Installs the facade (TF >= 2.16), --cpu_fallback, the peer timeout of
  a chief/worker job, the facade's wait for a lost ps and the guard; says
  what it did."""
  startup.prepare_program(sys.argv)  # Quiet C++ logs: no cuInit line.
  if startup.missing_keras():
    raise MissingDependencyError(startup.missing_keras())
  # pylint: disable=g-import-not-at-top  (after the Keras choice)
  import tensorflow as tf
  from trainer.compat import cpu_fallback as cluster
  from trainer.facade import install
  facade = install.install() or install.installed()
  if facade:
    _say(f'TensorFlow {tf.__version__} has no tf.estimator: the program\'s '
         'Estimator calls run on the trainer.legacy facade: on one device '
         'and on TF_CONFIG clusters on the graph engine (as Estimator), '
         'under a multi-replica or TPU strategy on the tf2 runner.')
    from trainer.engines.graph import cluster as graph_cluster
    graph_cluster.set_ps_timeout(ps_timeout_secs)
  else:
    _say(f'TensorFlow {tf.__version__} has tf.estimator: running the real '
         'Estimator unchanged.')
  if cpu_fallback:
    cluster.install_fallback()
    from trainer.compat import one_replica_tpu_ops  # pylint: disable=g-import-not-at-top
    one_replica_tpu_ops.install()
  _configure_peers(peer_timeout_secs, facade)
  _install_guard(skip_corrupt_records, facade)


def _install_guard(skip_corrupt_records, facade):
  """The trainer's guarantees for the program's Estimator.train / evaluate
  (trainer/guard/estimator_guard.py): the model_dir lock, recovery of an
  interrupted save, a checkpoint and exit 143 / 130 on SIGTERM / SIGINT,
  one error for a write the storage refuses; the program's TFRecord files
  are checked for a cut inside a record; on the real Estimator, every
  restore is refused first when the checkpoint does not fit the model
  (the facade checks at its own restores; trainer/guard/checkpoint_fit.py).
  """
  # pylint: disable=g-import-not-at-top  (after TensorFlow's set-up)
  from trainer.compat import estimator_wrappers
  from trainer.compat import tfrecord_checks
  from trainer.guard import checkpoint_fit
  from trainer.guard import estimator_guard
  estimator_wrappers.install(estimator_guard.train, estimator_guard.evaluate)
  if not facade:
    checkpoint_fit.install_restore_check()
  tfrecord_checks.install(functools.partial(_check_tfrecord_file,
                                            skip=skip_corrupt_records))


def _check_tfrecord_file(path, skip):
  """Refuses a local TFRecord file cut inside a record (TensorFlow would
  read it up to the cut without a word), naming it and the offset; with
  --skip_corrupt_records, says so and lets it be read."""
  from input_fn import corrupt_records  # pylint: disable=g-import-not-at-top
  from input_fn import record_framing  # pylint: disable=g-import-not-at-top
  if not record_framing.is_checkable(path):
    return
  record_framing.check_target(path)
  try:
    cut = record_framing.find_cut(path)
  except FileNotFoundError:
    return  # TensorFlow's own error names it.
  if cut is None:
    return
  if skip:
    _say(f'--skip_corrupt_records: {record_framing.describe(cut)}; the '
         'program reads the records before the cut.')
    return
  raise corrupt_records.truncated_files_error(
      [cut], flag='--skip_corrupt_records to the launcher (before the '
      'program)')


def _configure_peers(timeout_secs, facade):
  """Before the program makes its MultiWorkerMirroredStrategy: a lost peer
  fails the others after `timeout_secs`. A job with parameter servers
  trains by between-graph replication (servers, no coordination service);
  there, a MultiWorkerMirroredStrategy made eagerly would wait for the ps
  tasks forever, and is refused when made, naming the alternatives."""
  raw = os.environ.get('TF_CONFIG', '')
  try:
    has_ps = bool(json.loads(raw).get('cluster', {}).get('ps')) if raw else False
  except (ValueError, AttributeError):
    return  # The program's own TF_CONFIG error is clearer.
  if has_ps:
    if facade:
      from trainer.compat import collective_guard  # pylint: disable=g-import-not-at-top
      collective_guard.install(errors.CollectiveWithParameterServersError)
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


def _program_file(launch):
  """The file of the program `launch` runs (its traceback starts there),
  or None if it cannot be found."""
  if launch.kind == 'path':
    return os.path.abspath(launch.target)
  try:
    spec = importlib.util.find_spec(launch.target)
  except (ImportError, ValueError):
    return None
  return spec.origin if spec else None


def main(argv):
  """Runs the program argv names; returns an exit status (2: usage error)."""
  launch = None
  try:
    launch = parse(argv)
    if launch.kind == 'path' and not os.path.isfile(launch.target):
      raise UsageError(f'program file {launch.target} does not exist.')
    _prepare(launch.cpu_fallback, launch.peer_timeout_secs,
             launch.ps_timeout_secs, launch.skip_corrupt_records)
    _run(launch.kind, launch.target, launch.program_args)
  except UsageError as e:
    print(f'trainer.legacy: error: {e}\n{USAGE}', file=sys.stderr, end='')
    return 2
  except Exception as e:  # pylint: disable=broad-except
    # One line naming the cause first (trainer/runtime/failures.py).
    failures.print_report(e, failures.Where(
        'launcher', launch and _program_file(launch)), 'trainer.legacy: ')
    return 1
  except SystemExit as e:
    message = getattr(e, 'message', None)  # preemption.StoppedBySignal
    if message:
      print(f'trainer.legacy: {message}', file=sys.stderr)
    raise
  except KeyboardInterrupt:  # Ctrl-C outside training: nothing to save.
    print('trainer.legacy: interrupted (SIGINT) outside training: nothing '
          'was being trained; run the same command again.', file=sys.stderr)
    return 128 + signal.SIGINT
  return 0
