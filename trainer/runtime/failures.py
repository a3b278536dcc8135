"""The one place that turns a failure into the line a user reads first.

KNOWN is the registry of known failures, tried in order: each entry
recognises an exception (its type and message, the graph node it names,
the frames it was raised through) and returns `<cause, naming the flag,
file, feature, variable, task or address>. <fix>`, or None.
`report(error, where)` is what the entry points (trainer.main, the
launcher) print:

  * a known failure: its line alone; the traceback only with
    TRAINER_TRACEBACK=1 in the environment;
  * the program's own exception (raised in one of its files, not in
    TensorFlow, Estimator or this project): `<Type> raised at FILE:LINE in
    FUNCTION: <message>`, then its traceback from the program's first
    frame;
  * anything else: `<Type>: <message>` and where the program's code led to
    it (the last of its frames, or where it made the failing graph node),
    then the traceback.

Nothing here changes an exception; a report is only read from it.
"""

import dataclasses
import functools
import os
import site
import sys
import sysconfig
import traceback
from typing import Callable, Optional

from trainer.api import errors
from trainer.guard import estimator_failures
from trainer.guard import failure_parts
from trainer.runtime import cluster_failures

TRACEBACK_ENV = 'TRAINER_TRACEBACK'


@dataclasses.dataclass(frozen=True)
class Where:
  """Who reports: `entry` 'launcher' or 'main' (fixes name that entry
  point's knobs); `program`, the launcher's program file (its traceback
  starts there)."""

  entry: str
  program: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Known:
  """A known failure: recognise(error, where) -> its line, or None."""

  name: str
  recognise: Callable


@dataclasses.dataclass(frozen=True)
class Report:
  """The line to print first (without the entry point's prefix), and the
  traceback to print after it ('' for none)."""

  line: str
  traceback: str = ''


def _trainer_error(error, where):
  """The project's own errors say what to do (an error raised from one,
  as the facade's NanLossDuringTrainingError, is the API's: its entry's)."""
  del where
  return str(error) if isinstance(error, errors.TrainerError) else None


def _launcher_check(error, where):
  """The launcher's checks that fail inside TensorFlow (a TFRecord file
  checked as it is opened), a TPU-only call --cpu_fallback cannot run, a
  model_fn that returns a dict."""
  del where
  if not failure_parts.tensorflow_loaded():
    return None
  # pylint: disable=g-import-not-at-top  (they import TensorFlow)
  from trainer.api import model_fns
  from trainer.compat import one_replica_tpu_ops
  from trainer.compat import tfrecord_checks
  return (tfrecord_checks.raised_by_check(error) or
          one_replica_tpu_ops.unsupported_call(error) or
          model_fns.model_fn_misuse(error))


KNOWN = (
    Known('trainer-error', _trainer_error),
    Known('launcher-check', _launcher_check),
) + tuple(Known(name, fn) for name, fn in (
    cluster_failures.ENTRIES + estimator_failures.ENTRIES))


@functools.lru_cache(maxsize=None)
def _library_roots():
  """Where code that is not the user's lives: the standard library,
  site-packages, and this project's own packages."""
  paths = sysconfig.get_paths()
  roots = [paths.get(k) for k in ('stdlib', 'platstdlib', 'purelib',
                                  'platlib')]
  roots += list(getattr(site, 'getsitepackages', lambda: [])())
  project = os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))
  roots += [os.path.join(project, name) for name in ('trainer', 'input_fn',
                                                     'model_fn', 'flags.py')]
  return tuple(os.path.realpath(r) + (os.sep if not r.endswith('.py') else '')
               for r in roots if r)


def is_users(filename):
  """Whether `filename` is the user's code (not the standard library,
  site-packages, this project, or code TensorFlow generated)."""
  if not filename or filename.startswith('<') or (
      '__autograph_generated_file' in filename):
    return False
  path = os.path.realpath(filename)
  return not any(path == root or path.startswith(root)
                 for root in _library_roots())


def _location(filename, lineno, name):
  return f'{os.path.basename(filename)}:{lineno} in {name}'


def _raise_site(error):
  """(filename, lineno, function) where `error` was raised."""
  tb = error.__traceback__
  last = None
  while tb is not None:
    last = tb
    tb = tb.tb_next
  if last is None:
    return None
  return (last.tb_frame.f_code.co_filename, last.tb_lineno,
          last.tb_frame.f_code.co_name)


def _users_last_frame(error):
  """Where the user's code led to `error`: its last frame on the way, or
  where it made the graph node that failed; None."""
  op = getattr(error, 'op', None)
  made = getattr(op, 'traceback', None) if op is not None else None
  for frame in reversed(list(made or [])):
    if is_users(getattr(frame, 'filename', None)):
      return (f'node {op.name} made at '
              f'{_location(frame.filename, frame.lineno, frame.name)}')
  tb = error.__traceback__
  found = None
  while tb is not None:
    code = tb.tb_frame.f_code
    if is_users(code.co_filename):
      found = _location(code.co_filename, tb.tb_lineno, code.co_name)
    tb = tb.tb_next
  return f'called from {found}' if found else None


def _traceback(error, program):
  """The formatted traceback of `error`, from the program's first frame
  when it passed through `program`."""
  tb = error.__traceback__
  if program:
    wanted = os.path.realpath(program)
    start = tb
    while start is not None and os.path.realpath(
        start.tb_frame.f_code.co_filename) != wanted:
      start = start.tb_next
    tb = start or tb
  return ''.join(traceback.format_exception(type(error), error, tb))


def known(error, where):
  """The line of the first KNOWN entry recognising `error`, or None."""
  for entry in KNOWN:
    line = entry.recognise(error, where)
    if line:
      return line
  return None


def report(error, where):
  """The Report for `error` (see the module docstring)."""
  line = known(error, where)
  text = failure_parts.summary(failure_parts.message(error))
  name = type(error).__name__
  if line:
    shown = os.environ.get(TRACEBACK_ENV, '') not in ('', '0')
    return Report(line, _traceback(error, where.program) if shown else '')
  raised = _raise_site(error)
  if raised and is_users(raised[0]):
    return Report(f'{name} raised at {_location(*raised)}: {text}',
                  _traceback(error, where.program))
  led = _users_last_frame(error)
  return Report(f'{name}: {text}' + (f' ({led})' if led else ''),
                _traceback(error, where.program))


def print_report(error, where, prefix):
  """Prints report(error, where) on stderr: `PREFIXerror: LINE`, then the
  traceback if any; flushed, so it comes before anything printed at
  exit."""
  found = report(error, where)
  sys.stderr.write(f'{prefix}error: {found.line}\n{found.traceback}')
  sys.stderr.flush()
  return found
