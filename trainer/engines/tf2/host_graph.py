"""Runs a spec's host-side functions (host_call, metric_fn) as TPUEstimator does.

TPUEstimator calls host_call_fn and metric_fn once, in graph mode, on
tensors gathered from all shards, and then runs the resulting ops on the host
for each step. `HostGraph` does the same: it calls the function once inside
its own tf.compat.v1 Graph on placeholders shaped like the gathered tensors
and runs the ops in a Session, fed with each step's values. So a host_call
that creates a summary writer gets one writer, one events file per run, and
TF1 metric_fns (tf.compat.v1.metrics) work unchanged.
"""

import collections
from concurrent import futures

import tensorflow as tf

from trainer.compat import tf_private

_v1 = tf.compat.v1


def spec_of(array):
  """TensorSpec of a batch like `array`, any batch size."""
  return tf.TensorSpec([None] + list(array.shape[1:]), array.dtype)


def call_with(fn, args):
  """fn(**args) for a dict, fn(*args) for a list or tuple (the TPU contract)."""
  if isinstance(args, dict):
    return fn(**args)
  return fn(*args)


class HostGraph:
  """fn(placeholders) built once; `run(values)` evaluates it on step values."""

  def __init__(self, fn, specs, extra_fn=None):
    """specs: list/dict of tf.TensorSpec of fn's arguments.

    extra_fn(graph) may add more outputs (a dict) after fn is built.
    """
    self._graph = tf.Graph()
    with self._graph.as_default():
      self._inputs = tf.nest.map_structure(
          lambda s: _v1.placeholder(s.dtype, s.shape), specs)
      self.outputs = call_with(fn, self._inputs)
      self.extra = extra_fn() if extra_fn else None
      self._init = [_v1.local_variables_initializer(),
                    _v1.global_variables_initializer()]
      writer_inits = tf_private.summary_writer_init_ops()
      self._init += writer_inits
      self._flush = [tf.raw_ops.FlushSummaryWriter(writer=op.inputs[0])
                     for op in writer_inits]
    self._session = _v1.Session(graph=self._graph)
    self.reset()

  def reset(self):
    """Re-initialises the graph's variables (fresh metric accumulators)."""
    self._session.run(self._init)

  def feed(self, values):
    """The feed dict giving `values` (same structure as specs) to fn."""
    flat_inputs = tf.nest.flatten(self._inputs)
    flat_values = tf.nest.flatten(values)
    return dict(zip(flat_inputs, flat_values))

  def callable_for(self, fetches):
    """A fast callable f(*flat_values) that runs `fetches` (any structure of
    ops and tensors), fed like `feed`, in one call into the C++ session;
    returns the values of its tensors, flat."""
    return tf_private.fed_session_callable(
        self._session, tf.nest.flatten(self._inputs), tf.nest.flatten(fetches))

  def run(self, fetches, feed_dict=None):
    """Session.run of `fetches` (ops/tensors of this graph)."""
    return self._session.run(fetches, feed_dict=feed_dict)

  def flush(self):
    """Flushes every summary writer fn created."""
    if self._flush:
      self._session.run(self._flush)

  def close(self):
    self.flush()
    self._session.close()


class StepRunner:
  """Runs a callable on each step's values of submitted loops, in order, on
  one host thread while the caller goes on with the next loop (as
  TPUEstimator's outfeed thread runs host_call while the TPU trains).

  At most `max_pending` loops wait; `submit` and `wait` raise the first
  error of a loop that ran.
  """

  def __init__(self, max_pending=2):
    self._executor = futures.ThreadPoolExecutor(
        max_workers=1, thread_name_prefix='host_call')
    self._pending = collections.deque()
    self._max_pending = max_pending

  def submit(self, fn, arrays):
    """Will call fn(*[a[i] for a in arrays]) for every step i."""
    while self._pending and (self._pending[0].done() or
                             len(self._pending) >= self._max_pending):
      self._pending.popleft().result()
    self._pending.append(self._executor.submit(_each_step, fn, arrays))

  def wait(self):
    """Returns when every submitted loop has run."""
    while self._pending:
      self._pending.popleft().result()


def _each_step(fn, arrays):
  for i in range(arrays[0].shape[0]):
    fn(*[a[i] for a in arrays])
