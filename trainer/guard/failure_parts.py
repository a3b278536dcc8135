"""What the known-failure entries (trainer/runtime/failures.py) read from an
exception, without importing TensorFlow: its chain, its type by name, its
message's first meaningful line, the graph node it names, locals of the
frames it passed through, and facts the guard noted on it (the step).
"""

import re
import sys


def chain(error):
  """`error`, then what it was raised from (`raise ... from`), innermost
  last."""
  seen = []
  while error is not None and error not in seen:
    seen.append(error)
    error = error.__cause__
  return seen


def is_named(error, *names):
  """Whether a class in type(error)'s MRO is named one of `names` (so
  TensorFlow's types are recognised without importing TensorFlow)."""
  return any(c.__name__ in names for c in type(error).__mro__)


def message(error):
  """An OpError's message, else str(error)."""
  text = getattr(error, 'message', None)
  return text if isinstance(text, str) else str(error)


_NOISE = re.compile(r'^(Graph execution error:|Detected at node|\s*\[\[|'
                    r'Original stack trace|in user code:|\s*File "|'
                    r'Node: |Errors may have originated)')


def summary(text):
  """The line of an error message that says what failed: not TF's
  wrappers (`Graph execution error:`, `Detected at node ...`, stack
  lines), whitespace squeezed."""
  lines = [line.strip() for line in text.splitlines() if line.strip()]
  causes = [line for line in lines if not _NOISE.match(line)]
  found = causes[0] if causes else (lines[0] if lines else '')
  return re.sub(r'\s+', ' ', found)


def node(error):
  """The graph node an OpError names (`{{node head/losses/Cast}}`), or
  None."""
  op = getattr(error, 'op', None)
  name = getattr(op, 'name', None)
  if isinstance(name, str) and name:
    return name
  found = re.search(r"\{\{node ([^}]+)\}\}|Node: '([^']+)'", message(error))
  return (found.group(1) or found.group(2)) if found else None


def frames(error):
  """The frames `error`'s traceback passed through, innermost first."""
  found = []
  tb = error.__traceback__
  while tb is not None:
    found.append(tb.tb_frame)
    tb = tb.tb_next
  return found[::-1]


def frame_local(error, name, kind=None):
  """The innermost value of local variable `name` (an instance of `kind`,
  if given) in the frames of `error`'s chain, or None."""
  for link in chain(error):
    for frame in frames(link):
      if name in frame.f_locals:
        value = frame.f_locals[name]
        if kind is None or isinstance(value, kind):
          return value
  return None


def passed_through(error, *function_names):
  """Whether a frame of `error`'s chain runs one of `function_names`."""
  return any(frame.f_code.co_name in function_names
             for link in chain(error) for frame in frames(link))


_FACTS = '_trainer_facts'


def note(error, **facts):
  """Keeps `facts` (the step, the model_dir) with `error` for its report;
  the exception itself (type, message) is unchanged."""
  error.__dict__.setdefault(_FACTS, {}).update(facts)


def noted(error, name):
  """A fact note() kept on `error` or on what it was raised from."""
  for link in chain(error):
    value = getattr(link, '__dict__', {}).get(_FACTS, {}).get(name)
    if value is not None:
      return value
  return None


def tensorflow_loaded():
  """Whether TensorFlow is imported (entries that need it look only then)."""
  return 'tensorflow' in sys.modules
