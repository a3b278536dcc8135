"""SessionRunHooks under the tf2 runner, which has no Session.

A TF1 hook asks for tensors in `before_run` (SessionRunArgs) and reads their
values in `after_run`. Here, while the step function is traced, each hook's
`begin()` runs in the traced graph and its `before_run` fetches are added to
the step's outputs, recorded for every step of a loop; after each loop the
runner replays `before_run` / `after_run` once per step with that step's
values, so LoggingTensorHook, StepCounterHook, SummarySaverHook and hooks
written the same way work unchanged. `run_context.request_stop()` stops
training at the end of the loop (as on a TPU, where a loop is one
session.run).

There is no Session to run other graph tensors: `after_create_session`,
`end` and `run_context.session` get a `HostSession` that answers fetches
whose value it knows (eager tensors and variables, the global step, the
tensors the hooks fetched in the last step) and otherwise raises
HookNeedsSessionError naming the hook, before training starts where the
hook asks in `begin`/`after_create_session`.
"""

import contextlib
import logging

import tensorflow as tf

from trainer.compat import tf1_semantics

_v1 = tf.compat.v1
_GLOBAL_STEP_READ_KEY = 'global_step_read_op_cache'  # training_util's key.


class HookNeedsSessionError(RuntimeError):
  """A SessionRunHook needs a tf.compat.v1.Session the tf2 runner lacks."""


def _hook_name(hook):
  return type(hook).__name__


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

  def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
    del options, run_metadata
    if feed_dict:
      raise HookNeedsSessionError(
          f'{self._owner} feeds a tf.compat.v1.Session (feed_dict); the tf2 '
          'runner has none.')
    return tf.nest.map_structure(self._value, fetches)


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


class HookRunner:
  """Drives a list of SessionRunHooks around the steps of one mode."""

  def __init__(self, hooks):
    self.hooks = list(hooks or ())
    self._fetches = []  # Per hook: the flat fetch list seen at trace time.
    self._index = {}  # id(tensor) -> position in step outputs.
    self._tensors = []  # Step outputs, in position order.
    self._graph = None  # The graph trace() ran in.
    self._step_reads = ()
    self._last = {}

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

  def trace(self, extra_fetches=None):
    """Call inside the traced step after the model_fn: the tensors to output.

    Runs each hook's begin() and before_run() in the traced graph (enter
    the model_fn call's collections first: hooks look up the global step
    and summaries there) and returns the list of tensors the step must
    output (one value per step).
    """
    self._graph = _v1.get_default_graph()
    self._collections = {key: list(self._graph.get_collection(key))
                         for key in self._graph.get_all_collection_keys()
                         if isinstance(key, str) and not key.startswith('_')}
    self._index, self._tensors, self._fetches = {}, [], []
    self._step_reads = [id(t) for t in self._graph.get_collection(
        _GLOBAL_STEP_READ_KEY)]
    global_step = _v1.train.get_global_step()
    step_read = self._graph.get_collection(_GLOBAL_STEP_READ_KEY)
    with tf1_semantics.graph_semantics(), _quiet_collection_noise():
      for hook in self.hooks:
        hook.begin()
        context = _v1.train.SessionRunContext(
            original_args=_v1.train.SessionRunArgs(extra_fetches),
            session=HostSession(hook, self._graph, {}, lambda: 0))
        args = hook.before_run(context)
        flat = tf.nest.flatten(args.fetches) if args is not None else []
        self._fetches.append(flat)
        for fetch in flat:
          if id(fetch) in self._index:
            continue
          if fetch is global_step and step_read:
            tensor = step_read[0]  # Read before the step's update, as TF1.
          elif isinstance(fetch, tf.Variable):
            tensor = fetch.read_value()
          elif isinstance(fetch, tf.Tensor):
            tensor = fetch
          else:
            continue  # Ops (and None) have no value.
          self._index[id(fetch)] = len(self._tensors)
          self._tensors.append(tensor)
    return list(self._tensors)

  def restart(self):
    """Calls every hook's begin() again in the traced graph, with the
    collections of the trace, as a new Estimator.train() call would
    (timers restart)."""
    from trainer.tf2 import model_fn_adapter  # pylint: disable=g-import-not-at-top
    with self._graph.as_default(), model_fn_adapter.fresh_collections(
        self._collections), tf1_semantics.graph_semantics(), (
            _quiet_collection_noise()):
      for hook in self.hooks:
        hook.begin()

  def after_create_session(self, global_step):
    """Before the first step; a hook that runs graph tensors fails here."""
    for hook in self.hooks:
      hook.after_create_session(self._session(hook, global_step), None)

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
    stop = False
    for offset, values in enumerate(step_values):
      self._last = {key: values[i] for key, i in self._index.items()}
      step = first_step + offset

      def before(step=step):  # session.run before the step: its start.
        return step

      def after(step=step):  # After the step: the updated global step.
        return step + 1

      for hook in self.hooks:
        context = _v1.train.SessionRunContext(
            original_args=_v1.train.SessionRunArgs(None),
            session=self._session(hook, before))
        args = hook.before_run(context)
        results = None
        if args is not None:
          results = tf.nest.map_structure(self._value_of(hook), args.fetches)
        context = _v1.train.SessionRunContext(
            original_args=context.original_args,
            session=self._session(hook, after))
        hook.after_run(context, _v1.train.SessionRunValues(
            results=results, options=None, run_metadata=None))
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

  def end(self, global_step):
    for hook in self.hooks:
      hook.end(self._session(hook, global_step))
