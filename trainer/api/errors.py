"""The one base of the errors the project raises for a user to act on.

Every such error type derives from `TrainerError` (and from the built-in
type callers catch: ValueError, RuntimeError, NotImplementedError, ...);
its message names what is at fault (a flag, a file, an API) and what to do.
Entry points print it as one line, without a traceback.
"""


class TrainerError(Exception):
  """An error whose message tells the user what to fix."""


class CollectiveWithParameterServersError(TrainerError, ValueError):
  """A MultiWorkerMirroredStrategy made eagerly would wait forever for the
  cluster's ps tasks (raised by the launcher's guard)."""
