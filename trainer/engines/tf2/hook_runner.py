"""SessionRunHooks under the tf2 runner, which has no Session.

A TF1 hook asks for tensors in `before_run` (SessionRunArgs) and reads their
values in `after_run`. Here, while the step function is traced (after the
variables are made and loaded), each hook's `begin()` runs in the traced
graph, then `after_create_session` (the variables are loaded: the session
exists), then the first step's `before_run`, whose fetches are added to the
step's outputs, recorded for every step of a loop; after each loop the
runner replays `before_run` (from the second step on) / `after_run` once per
step with that step's values, so LoggingTensorHook, StepCounterHook,
SummarySaverHook and hooks written the same way work unchanged, called as
often and in the order a MonitoredSession calls them; at the end of the
input the hooks get the `before_run` of the session.run that finds no
batch, as in TF1. `run_context.request_stop()` stops training at the end
of the loop (as on a TPU, where a loop is one session.run). Where a hook
may stop between two steps, the runner replays each step inside the loop,
right after it (train.py's _InLoopHooks), or makes loops of one step
across workers, so training stops at the step a Session's would.

There is no Session to run other graph tensors: `after_create_session`,
`end` and `run_context.session` get a `HostSession` that answers fetches
whose value it knows (eager tensors and variables, the global step, the
tensors the hooks fetched in the last step) and otherwise raises
HookNeedsSessionError naming the hook, before training starts where the
hook asks in `begin`/`after_create_session`.
"""

import contextlib
import logging
import time

import tensorflow as tf

from trainer.api import errors
from trainer.compat import tf1_semantics
from trainer.compat import tf_private

_v1 = tf.compat.v1


class HookNeedsSessionError(errors.TrainerError, RuntimeError):
  """A SessionRunHook needs a tf.compat.v1.Session the tf2 runner lacks."""


def _hook_name(hook):
  return type(hook).__name__


class _Clock:
  """The time module as basic_session_run_hooks sees it during a replay."""

  def __init__(self):
    self.now = time.time()

  def time(self):
    return self.now

  def __getattr__(self, name):
    return getattr(time, name)


@contextlib.contextmanager
def _replay_clock():
  """Within the block, the timers of TF's standard hooks (StepCounterHook,
  LoggingTensorHook, ... through SecondOrStepTimer) read the clock yielded,
  not the wall clock: a loop's steps are replayed after it in microseconds,
  which would make global_step/sec absurd."""
  module = tf_private.session_run_hooks_module()
  clock = _Clock()
  module.time = clock
  try:
    yield clock
  finally:
    module.time = time


class HostSession:
  """What hooks and scaffolds get for `session`: answers fetches whose
  values are known (eager values, the global step, last step's fetches)."""

  def __init__(self, owner, graph, values, global_step, step_reads=()):
    self._owner = owner if isinstance(owner, str) else (
        f'SessionRunHook {_hook_name(owner)}')
    self.graph = graph
    self._values = values  # {id(fetched object): value} of the last step.
    self._global_step = global_step  # () -> int
    self._step_reads = set(step_reads)  # ids of global-step reads.

  def _value(self, fetch):
    if fetch is None:
      return None
    if id(fetch) in self._step_reads:  # Read when session.run is called.
      return self._global_step()
    if id(fetch) in self._values:
      return self._values[id(fetch)]
    if isinstance(fetch, tf.Variable) or hasattr(fetch, 'numpy'):
      return fetch.numpy()
    raise HookNeedsSessionError(
        f'{self._owner} runs {fetch!r} in a tf.compat.v1.Session; the tf2 '
        'runner has none. In a hook, return the tensor from before_run() in '
        'SessionRunArgs (its value then reaches after_run); write summaries '
        'with host_call; initialise variables with initializers or '
        'tf.compat.v1.train.init_from_checkpoint.')

  def at_step(self, values, step):
    """From now on answers with `values` (id -> value) and global step
    `step`, as a live session would as training goes on."""
    self._values = values
    self._global_step = lambda: step

  def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
    del options, run_metadata
    if feed_dict:
      raise HookNeedsSessionError(
          f'{self._owner} feeds a tf.compat.v1.Session (feed_dict); the tf2 '
          'runner has none.')
    return map_fetches(self._value, fetches)


def map_fetches(fn, fetches):
  """tf.nest.map_structure(fn, fetches), quicker for the structures hooks
  fetch (dicts, lists, tuples of tensors): the replay runs per step."""
  kind = type(fetches)
  if kind is dict:
    return {key: map_fetches(fn, value) for key, value in fetches.items()}
  if kind is list or kind is tuple:
    return kind(map_fetches(fn, value) for value in fetches)
  if fetches is None or isinstance(fetches, (tf.Tensor, tf.Variable,
                                             tf.Operation)):
    return fn(fetches)
  return tf.nest.map_structure(fn, fetches)


class _CollectionNoise(logging.Filter):
  """Drops meta_graph's warnings that collections of variables made outside
  the graph cannot be serialised: a SummarySaverHook writes the traced graph
  when it begins, whose collections hold such variables (harmless)."""

  def filter(self, record):
    return not record.getMessage().startswith(
        'Issue encountered when serializing')


@contextlib.contextmanager
def _quiet_collection_noise():
  noise = _CollectionNoise()
  tf.get_logger().addFilter(noise)
  try:
    yield
  finally:
    tf.get_logger().removeFilter(noise)


def placeholders_like(tensors):
  """Zeros with the dtypes (and static sizes, unknown ones 0) of `tensors`:
  what replicas other than the first output where the first outputs its
  hooks' fetches (hooks see the first replica, as Estimator's do)."""
  return [tf.zeros([d if d is not None else 0 for d in t.shape], t.dtype)
          if t.shape.rank is not None else tf.zeros([0], t.dtype)
          for t in tensors]


def _profiler_hook_problem(hook):
  del hook
  return ('traces session.run calls into timeline-N.json files (a '
          "Session's RunMetadata step stats), which the tf2 runner's "
          'tf.function steps do not give. Profile with '
          'tf.profiler.experimental.start(logdir) and stop() around the '
          'call (TensorBoard\'s Profile tab), or run it without a '
          'distribution strategy, where a Session runs the hook')


def _final_ops_hook_problem(hook):
  tensors = [op for op in tf.nest.flatten(tf_private.final_ops_of(hook))
             if not isinstance(op, tf.Variable)]
  if not tensors:
    return None  # Variables: their final values are known at the end.
  return (f'runs {tensors[0]!r} in a tf.compat.v1.Session after the last '
          'step, which the tf2 runner has none of. Give FinalOpsHook '
          'variables (their final values are read), fetch the tensor in a '
          "hook's before_run (its last value reaches after_run), or run it "
          'without a distribution strategy, where a Session runs the hook')


# Hooks whose point is what only a Session gives (RunMetadata, a session.run
# after the last step): type -> problem(hook), a sentence or None if this
# instance is fine. Refused when the step is traced, before its first run.
_SESSION_ONLY_HOOKS = {
    _v1.train.ProfilerHook: _profiler_hook_problem,
    _v1.train.FinalOpsHook: _final_ops_hook_problem,
}


def refuse_session_only_hooks(hooks):
  """Raises HookNeedsSessionError for the first hook in `hooks` that needs a
  Session's own features (ProfilerHook's step stats, FinalOpsHook over
  graph tensors), naming it and what to do instead."""
  for hook in hooks:
    for kind, problem in _SESSION_ONLY_HOOKS.items():
      sentence = problem(hook) if isinstance(hook, kind) else None
      if sentence:
        raise HookNeedsSessionError(
            f'SessionRunHook {_hook_name(hook)} {sentence}.')


class HookRunner:
  """Drives a list of SessionRunHooks around the steps of one mode."""

  def __init__(self, hooks):
    self.hooks = list(hooks or ())
    refuse_session_only_hooks(self.hooks)
    self._fetches = []  # Per hook: the flat fetch list seen at trace time.
    self._index = {}  # id(tensor) -> position in step outputs.
    self._tensors = []  # Step outputs, in position order.
    self._graph = None  # The graph trace() ran in.
    self._step_reads = ()
    self._last = {}
    self._first_args = None  # Per hook: the traced before_run's args.
    self.session_started = False  # after_create_session ran at the trace.

  def __bool__(self):
    return bool(self.hooks)

  def traced_in_current_graph(self):
    """True if trace() ran in the graph being built: a later replica of the
    same step then outputs placeholders_like(traced_tensors)."""
    return self._graph is _v1.get_default_graph()

  @property
  def traced_tensors(self):
    """The tensors the last trace() asked the step to output."""
    return list(self._tensors)

  def trace(self, extra_fetches=None, session_step=None):
    """Call inside the traced step after the model_fn: the tensors to output.

    Runs each hook's begin(), then, given `session_step` (a callable: the
    loaded variables' step), each after_create_session(), then each
    before_run() -- the first step's -- in the traced graph (enter the
    model_fn call's collections first: hooks look up the global step and
    summaries there) and returns the list of tensors the step must output
    (one value per step).
    """
    self._graph = _v1.get_default_graph()
    self._collections = {key: list(self._graph.get_collection(key))
                         for key in self._graph.get_all_collection_keys()
                         if isinstance(key, str) and not key.startswith('_')}
    self._index, self._tensors, self._fetches = {}, [], []
    step_reads = self._graph.get_collection(tf_private.GLOBAL_STEP_READ_KEY)
    self._step_reads = [id(t) for t in step_reads]
    global_step = _v1.train.get_global_step()
    self._first_args = []
    refuse_session_only_hooks(self.hooks)  # Also those the model_fn made.
    with tf1_semantics.graph_semantics(), _quiet_collection_noise():
      for hook in self.hooks:
        hook.begin()
      self.session_started = session_step is not None
      step_now = lambda: 0  # pylint: disable=unnecessary-lambda-assignment
      if self.session_started:
        with tf.init_scope():  # The session reads loaded variables.
          value = int(session_step())
          step_now = lambda: value  # pylint: disable=unnecessary-lambda-assignment
          self.after_create_session(step_now)
      for hook in self.hooks:
        context = _v1.train.SessionRunContext(
            original_args=_v1.train.SessionRunArgs(extra_fetches),
            session=HostSession(hook, self._graph, {}, step_now,
                                self._step_reads))
        args = hook.before_run(context)
        if args is not None and args.feed_dict:
          raise HookNeedsSessionError(
              f'SessionRunHook {_hook_name(hook)} feeds a '
              'tf.compat.v1.Session (SessionRunArgs(feed_dict=...)); the tf2 '
              'runner has none: feed data through the input_fn\'s dataset.')
        self._first_args.append(args)
        flat = tf.nest.flatten(args.fetches) if args is not None else []
        self._fetches.append(flat)
        for fetch in flat:
          if id(fetch) in self._index:
            continue
          tensor = self._fetched_tensor(hook, fetch, global_step, step_reads)
          if tensor is None:
            continue  # Ops (and None) have no value.
          self._index[id(fetch)] = len(self._tensors)
          self._tensors.append(tensor)
    return list(self._tensors)

  def _fetched_tensor(self, hook, fetch, global_step, step_reads):
    """The tensor whose per-step value answers `fetch` (a tensor, variable
    or graph-element name); None for ops. The global step gives its value
    at the step's start, as a TF1 session fetching it with train_op did."""
    if isinstance(fetch, str):
      try:
        fetch = tf1_semantics.graph_element(fetch)
      except (KeyError, ValueError) as e:
        raise HookNeedsSessionError(
            f'SessionRunHook {_hook_name(hook)} fetches {fetch!r}, which '
            f'names no tensor or variable of the step: {e}') from e
      if isinstance(fetch, tf.Operation):
        return None
    if isinstance(fetch, tf.Variable):
      if global_step is not None and fetch is global_step and step_reads:
        return step_reads[0]
      return fetch.read_value()
    if isinstance(fetch, tf.Tensor):
      return fetch
    return None

  @contextlib.contextmanager
  def _in_traced_graph(self):
    """Within: the traced graph is the default, with the trace's
    collections, as in a Session's run (a hook's before_run may look
    tensors up by name or collection)."""
    from trainer.engines.tf2 import model_fn_adapter  # pylint: disable=g-import-not-at-top
    if self._graph is None:
      yield
      return
    # Graph's own as_default: FuncGraph's also inherits the outer graph's
    # device and control scopes, which a lookup needs not (and costs a new
    # Graph a call in a py_function's thread: 0.15 ms a step replayed).
    with tf.Graph.as_default(self._graph), model_fn_adapter.fresh_collections(
        self._collections), tf1_semantics.graph_semantics(), (
            _quiet_collection_noise()):
      yield

  @contextlib.contextmanager
  def replaying(self):
    """Within the block, the TF1 semantics a replay needs stay installed
    (tf1_semantics.graph_semantics, process-wide), so that replaying each
    step of a loop inside it, as the loop runs, installs none of them."""
    with tf1_semantics.graph_semantics(), _quiet_collection_noise():
      yield

  def restart(self):
    """Calls every hook's begin() again in the traced graph, with the
    collections of the trace, as a new Estimator.train() call would
    (timers restart)."""
    self._first_args = None  # Each step's before_run is called again.
    self.session_started = False
    with self._in_traced_graph():
      for hook in self.hooks:
        hook.begin()

  def after_create_session(self, global_step):
    """Before the first step; a hook that runs graph tensors fails here."""
    for hook in self.hooks:
      hook.after_create_session(self._session(hook, global_step), None)
    self.steps_start()

  def steps_start(self):
    """The steps start now (their timers: global_step/sec)."""
    self._loop_start = time.time()

  def _session(self, hook, global_step):
    return HostSession(hook, self._graph, self._last, global_step,
                       self._step_reads)

  def after_steps(self, step_values, first_step, global_step):
    """Replays before_run/after_run for each step of a loop.

    step_values: one list per step of the values of `trace()`'s tensors.
    first_step: global_step before the first of these steps; in after_run a
    hook's session.run of the global step gives the step's end, as a real
    session would. Returns True if a hook requested a stop.
    """
    del global_step  # Each step's value is known: first_step + offset.
    start = getattr(self, '_loop_start', None) or time.time()
    end = time.time()
    with _replay_clock() as clock, self._in_traced_graph():
      stop = self._replay(step_values, first_step, clock, start, end)
    self._loop_start = time.time()
    return stop

  def _replay(self, step_values, first_step, clock, start, end):
    """after_steps' replay; hooks' timers read `clock`, which says when each
    step ended had the loop's wall time been spread evenly over them."""
    stop = False
    # One session and fetch reader per hook for the whole loop.
    sessions = [self._session(hook, None) for hook in self.hooks]
    readers = [self._value_of(hook) for hook in self.hooks]
    no_args = _v1.train.SessionRunArgs(None)  # The replay's original_args.
    for offset, values in enumerate(step_values):
      first_args, self._first_args = self._first_args, None
      self._last = {key: values[i] for key, i in self._index.items()}
      step = first_step + offset
      clock.now = start + (end - start) * (offset + 1) / len(step_values)
      # As a MonitoredSession's run: every hook's before_run, the step,
      # every hook's after_run; session.run in before_run gives the step's
      # start, in after_run its end.
      results = []
      for i, (hook, session, read) in enumerate(zip(self.hooks, sessions,
                                                    readers)):
        session.at_step(self._last, step)
        if first_args is not None:  # The trace called the first one.
          args = first_args[i]
        else:
          args = hook.before_run(_v1.train.SessionRunContext(
              original_args=no_args, session=session))
        results.append(None if args is None else
                       map_fetches(read, args.fetches))
      for hook, session, result in zip(self.hooks, sessions, results):
        session.at_step(self._last, step + 1)
        context = _v1.train.SessionRunContext(original_args=no_args,
                                              session=session)
        hook.after_run(context, _v1.train.SessionRunValues(
            results=result, options=None, run_metadata=None))
        stop = stop or context.stop_requested
    return stop

  def _value_of(self, hook):
    def value(fetch):
      if fetch is None or isinstance(fetch, tf.Operation):
        return None
      if id(fetch) not in self._index:
        raise HookNeedsSessionError(
            f'SessionRunHook {_hook_name(hook)} fetched {fetch!r}, which it '
            'did not fetch on the first step; the tf2 runner records what '
            'hooks fetch when it builds the step.')
      return self._last[id(fetch)]
    return value

  def input_ended(self, global_step):
    """The hooks' before_run of the session.run that found the input at its
    end (TF1: OutOfRangeError follows; no after_run)."""
    if self._first_args is not None:  # The trace's call was that one.
      self._first_args = None
      return
    no_args = _v1.train.SessionRunArgs(None)
    for hook in self.hooks:
      session = self._session(hook, global_step)
      hook.before_run(_v1.train.SessionRunContext(original_args=no_args,
                                                  session=session))

  def end(self, global_step):
    for hook in self.hooks:
      hook.end(self._session(hook, global_step))
