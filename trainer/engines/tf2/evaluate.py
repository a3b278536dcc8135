"""Evaluation and prediction under the tf2 runner, as TPUEstimator does them.

Each evaluate() or predict() loads a checkpoint (the given one, else
model_dir's latest) through the spec's Scaffold, so an EMA model_fn's
evaluation saver puts the moving averages in place; without a checkpoint
the variables are initialised (Scaffold init_fn), as Estimator does.

Evaluation on one host's devices (the default strategy, MirroredStrategy)
is Estimator's on one device (eval_graph.py): each batch (the global batch,
partial last batch included) runs through one graph traced once, where
only what is fetched runs, as in a Session: the loss, the eval_metrics
tensors, the update ops of eval_metric_ops and what hooks fetch; the value
ops of eval_metric_ops run once, after the last batch. On several replicas
the first replica evaluates the whole batch, so the result is the
one-device result; the model_fn sees params['batch_size'] = the global
eval batch, as under Estimator. On TPU (and across workers) each replica
evaluates its own slice in one tf.function, the loss averaged over
replicas, as TPUEstimator's shards (its first trace is checked for variable
updates nothing fetches, graph_check.py). Metrics come from either spec:
  * TPUEstimatorSpec eval_metrics=(metric_fn, tensors): metric_fn runs on
    the host, once, in a graph fed with each batch's tensors (host_graph.py),
    as on TPU;
  * EstimatorSpec eval_metric_ops: (value, update_op) pairs, or Keras
    Metrics (their update is the step's write to their variables); their
    accumulators start from zero in each evaluate().
The loss is the mean of the batches' losses, Estimator's
`tf.compat.v1.metrics.mean(loss)`. evaluate() writes the result and the
evaluated checkpoint's path to model_dir/eval (eval_NAME) at its global
step, as Estimator does, and runs the spec's evaluation_hooks and the
call's hooks (hook_runner.py).
"""

import contextlib
import functools

import tensorflow as tf

from absl import logging

from trainer.api import estimator_names as estimator_compat
from trainer.compat import tf_private
from trainer.engines.tf2 import eval_graph
from trainer.engines.tf2 import graph_check
from trainer.engines.tf2 import host_graph
from trainer.engines.tf2 import model_fn_adapter
from trainer.engines.tf2 import hook_runner as hooks_lib
from trainer.runtime import eval_summaries
from trainer.runtime import predictions as predictions_lib
from trainer.runtime import strategy as strategy_lib

_MEAN = tf.distribute.ReduceOp.MEAN
# Strategy kinds whose replicas each evaluate their own slice of the batch.
_PER_REPLICA_KINDS = ('tpu', 'multi_worker_mirrored')


def _is_keras_metric(metric):
  return hasattr(metric, 'result') and callable(metric.result)


def _metric_value(metric):
  """The value tensor of an eval_metric_ops entry: (value, update) or a
  Keras Metric."""
  if _is_keras_metric(metric):
    return metric.result()
  value, _ = metric
  return value


def _check_metric_ops(metrics, num_replicas):
  """NotImplementedError for tf.compat.v1.metrics over several replicas
  (measured: their variables cannot be created in a replica inside
  tf.function, UnliftableError)."""
  pairs = [name for name, metric in (metrics or {}).items()
           if not _is_keras_metric(metric)]
  if pairs and num_replicas > 1:
    raise NotImplementedError(
        f'EstimatorSpec.eval_metric_ops {sorted(pairs)} (tf.compat.v1.metrics) '
        f'over {num_replicas} replicas: the tf2 runner cannot create their '
        'variables in a replica. Evaluate on one replica (no '
        'eval_distribute), or return TPUEstimatorSpec(eval_metrics=(metric_fn,'
        ' tensors)), whose metric_fn runs on the host.')


def _metric_fetches(metrics):
  """(what the step fetches, variables it updates without fetching) of
  eval_metric_ops: (value, update) pairs are fetched; a Keras Metric's
  updates are not, and write its variables."""
  fetches, variables = [], []
  for metric in (metrics or {}).values():
    if _is_keras_metric(metric):
      variables += list(metric.variables)
    else:
      fetches += list(metric)
  return fetches, variables


class _OneDeviceSteps:
  """Evaluation steps on one host's devices, in a graph run as a Session
  runs it (eval_graph.EvalGraph), on the first replica: each step's global
  batch (the replicas' slices joined), or, where the input_fn's batch is
  one replica's (Estimator with eval_distribute: no global batch), each
  replica's batch in turn, empty ones skipped, as one device would see the
  input_fn's batches."""

  def __init__(self, evaluation, dataset, element):
    self._evaluation = evaluation
    runner = evaluation.runner
    self._strategy = runner.strategy
    self._per_replica = (runner.num_replicas > 1 and
                         not runner.batch_size(estimator_compat.ModeKeys.EVAL))
    batch = self._batches(element)[0]
    spec = eval_graph.joined_spec(
        getattr(dataset, 'element_spec', None), batch,
        1 if self._per_replica else runner.num_replicas)
    run_replicas = functools.partial(runner.module.run_replicas,
                                     self._strategy)

    def make_graph():  # The module finds the variables inside the trace.
      with self._strategy.scope():
        return eval_graph.EvalGraph(
            self._strategy, evaluation.replica_fetches, spec, run_replicas,
            variable_scope=runner.module.creation_scope)

    try:  # Variables made in an earlier trace (training's, an evaluation's).
      with eval_graph.no_new_variables():
        self._graph = make_graph()
    except eval_graph.NewVariableError:
      self._make_variables(spec)
      self._graph = make_graph()

  def _batches(self, element):
    if self._per_replica:
      return eval_graph.replica_batches(self._strategy, element)
    return [eval_graph.join_replicas(self._strategy, element)]

  def _make_variables(self, spec):
    """Traces the model_fn once (the trace never runs) making its variables
    eagerly, with the model_fn's names and collections."""
    runner = self._evaluation.runner
    strategy = self._strategy

    def replica(features, labels):
      self._evaluation.call_model_fn(features, labels)

    def make(*flat):
      batch = tf.nest.pack_sequence_as(spec, list(flat),
                                       expand_composites=True)
      runner.module.run_replicas(strategy, model_fn_adapter.plain(replica),
                                 model_fn_adapter.features_labels(batch))

    with eval_graph.eager_variables(), runner.scope():
      tf_private.create_variables(
          make, *tf.nest.flatten(spec, expand_composites=True))

  def run(self, element):
    """One step: [(loss, eval_metrics tensors, hook fetches)] (numpy) of
    each batch it evaluated."""
    results = []
    for batch in self._batches(element):
      fetched = self._graph.update(batch)
      results.append((fetched['loss'], fetched['metric_args'],
                      fetched['hooks']))
    return results

  def values(self):
    return self._graph.values()

  def check(self, mode):
    del mode  # Nothing runs that is not fetched, as in a Session.


class _ReplicatedSteps:
  """Evaluation steps on TPU and across workers: each replica its slice,
  in one tf.function;
  the loss averaged and the eval_metrics tensors gathered over replicas,
  eval_metric_ops read after each batch."""

  def __init__(self, evaluation, dataset, element):
    del dataset
    self._evaluation = evaluation
    self._fn = evaluation.distributed_fn(evaluation.replica_eval_step)
    with evaluation.runner.scope():
      self._fn.get_concrete_function(element)
    self._values = {}

  def run(self, element):
    with self._evaluation.runner.scope():
      outputs = self._fn(element)
    self._values = outputs['metric_values']
    return [(outputs['loss'].numpy(),
             [v.numpy() for v in outputs['metric_args']],
             [v.numpy() for v in outputs['hooks']])]

  def values(self):
    return {k: v.numpy() for k, v in self._values.items()}

  def check(self, mode):
    self._evaluation.checks.check(mode)


class Evaluation:
  """evaluate / predict of a Tf2Engine (its strategy, module, input)."""

  def __init__(self, runner):
    self.runner = runner
    self._spec = None  # The normalised spec of the last trace.
    self._hooks = None  # hooks.HookRunner of the last trace.
    self._call_hooks = ()
    self._hooks_in_trace = False  # Only once the variables are loaded.
    self.checks = graph_check.Recorder()

  def _trace_hooks(self, spec, outputs):
    """Hooks traced on the process's first replica (placeholders on the
    others), the call's before the spec's, as Estimator orders them; none
    in the trace that makes and loads the variables (the hooks' session
    starts in the next)."""
    if not self._hooks_in_trace:
      outputs['hooks'] = []
      self._hooks = None
      return
    if self._hooks is not None and self._hooks.traced_in_current_graph():
      outputs['hooks'] = hooks_lib.placeholders_like(
          self._hooks.traced_tensors)
      return
    runner = self.runner
    graph = tf.compat.v1.get_default_graph()
    with runner.module.in_call_collections(), graph.name_scope(None):
      hook_runner = hooks_lib.HookRunner(list(self._call_hooks) +
                                         list(spec.hooks))
      outputs['hooks'] = hook_runner.trace(session_step=self._step)
    self._hooks = hook_runner

  def _has_hooks(self):
    return bool(self._call_hooks or (self._spec and self._spec.hooks))

  @contextlib.contextmanager
  def _tracing_hooks(self):
    """A trace in the block runs the hooks' begin, after_create_session and
    first before_run (the variables are loaded)."""
    self._hooks_in_trace = True
    try:
      yield
    finally:
      self._hooks_in_trace = False

  def call_model_fn(self, features, labels):
    """The model_fn's EVAL spec on the whole batch of one device:
    params['batch_size'] is the global eval batch, as under Estimator."""
    runner = self.runner
    mode = estimator_compat.ModeKeys.EVAL
    spec = runner.call_model_fn(features, labels, mode,
                                batch_size=runner.batch_size(mode))
    if spec.loss is None:
      raise ValueError('model_fn returned no loss in EVAL.')
    return spec

  def replica_fetches(self, features, labels, replica):
    """EvalGraph's replica_fn: (fetches, update ops, values) of the model_fn
    on one device's batch; hooks are traced on the first replica."""
    first_op = len(tf.compat.v1.get_default_graph().get_operations())
    spec = self.call_model_fn(features, labels)
    fetches = {'loss': spec.loss, 'metric_args': [], 'hooks': []}
    if spec.eval_metrics is not None:
      fetches['metric_args'] = tf.nest.flatten(spec.eval_metrics[1])
    values = {name: _metric_value(metric)
              for name, metric in (spec.eval_metric_ops or {}).items()}
    updates = [metric[1] for metric in (spec.eval_metric_ops or {}).values()
               if not _is_keras_metric(metric)]
    # A Keras Metric's update is its write to its variables, which TF
    # records nowhere (an EstimatorSpec of TF 2.15 pairs its result with a
    # stand-in op): run this replica's writes to metric accumulators.
    updates += eval_graph.variable_writes(
        self.runner.strategy, self._metric_variables(spec), replica, first_op)
    if replica == 0:
      self._spec = spec
      self._hooks = None
      self._trace_hooks(spec, fetches)
    return fetches, updates, values

  def replica_eval_step(self, features, labels):
    """The replica step of _ReplicatedSteps."""
    started = graph_check.Recorder.start()
    spec = self.runner.call_model_fn(features, labels,
                                     estimator_compat.ModeKeys.EVAL)
    if spec.loss is None:
      raise ValueError('model_fn returned no loss in EVAL.')
    _check_metric_ops(spec.eval_metric_ops, self.runner.num_replicas)
    self._spec = spec
    outputs = {'loss': spec.loss, 'metric_args': [], 'metric_values': {}}
    if spec.eval_metrics is not None:
      outputs['metric_args'] = tf.nest.flatten(spec.eval_metrics[1])
    if spec.eval_metric_ops:
      outputs['metric_values'] = {name: _metric_value(metric) for name, metric
                                  in spec.eval_metric_ops.items()}
    self._trace_hooks(spec, outputs)
    fetches, updated = _metric_fetches(spec.eval_metric_ops)
    self.checks.add(started, [spec.loss] + outputs['metric_args'] + fetches +
                    list(outputs['hooks']), updated)
    return outputs

  def _replica_predict_step(self, features, labels):
    del labels
    started = graph_check.Recorder.start()
    spec = self.runner.call_model_fn(features, None,
                                     estimator_compat.ModeKeys.PREDICT)
    if spec.predictions is None:
      raise ValueError('model_fn returned no predictions in PREDICT.')
    self._spec = spec
    outputs = {'predictions': spec.predictions}
    self._trace_hooks(spec, outputs)
    self.checks.add(started, tf.nest.flatten(spec.predictions) +
                    list(outputs['hooks']))
    return outputs

  def distributed_fn(self, replica_fn, signature=None):
    """tf.function of replica_fn over the strategy's replicas; traced for
    `signature` (a distributed dataset's element_spec) when given."""
    strategy = self.runner.strategy

    def fn(element):
      features, labels = model_fn_adapter.features_labels(element)
      outputs = self.runner.module.run_replicas(
          strategy, model_fn_adapter.plain(replica_fn), (features, labels))

      def first(value):  # Already combined across replicas (merge_call).
        return strategy.experimental_local_results(value)[0]

      def gathered(value):
        if strategy.experimental_local_results(value)[0].shape.rank:
          return strategy_lib.gather(strategy, value, axis=0)
        return strategy.reduce(_MEAN, value, axis=None)

      combined = {'hooks': [strategy.experimental_local_results(t)[0]
                            for t in outputs.pop('hooks')]}
      if 'metric_values' in outputs:
        combined['metric_values'] = tf.nest.map_structure(
            first, outputs.pop('metric_values'))
      combined.update(tf.nest.map_structure(gathered, outputs))
      return combined

    if signature is not None:
      return tf.function(fn, autograph=False, input_signature=[signature])
    return tf.function(fn, autograph=False)

  def _step(self):
    """The global step of the loaded variables (of checkpoint_path, not
    necessarily the latest checkpoint)."""
    variable = self.runner.module.variables_by_name().get('global_step')
    return 0 if variable is None else int(variable.numpy())

  def _loaded(self, mode, checks, checkpoint_path):
    """After the trace: loads the checkpoint, checks the trace."""
    runner = self.runner
    runner.load(self._spec, checkpoint_path)
    checks(mode)
    runner.stale = True  # Training reloads its own state before going on.

  def _prepare(self, make_fn, element, checkpoint_path, hooks):
    """Traces make_fn() (creating variables), loads the checkpoint, and
    traces it again with the hooks if there are any; the function."""
    self._call_hooks = tuple(hooks)
    fn = make_fn()
    with self.runner.scope():
      fn.get_concrete_function(element)
    self._loaded(self._spec.mode, self.checks.check, checkpoint_path)
    if self._has_hooks():
      fn = make_fn()
      with self.runner.scope(), self._tracing_hooks():
        fn.get_concrete_function(element)
    if self._hooks:
      self._hooks.steps_start()
    return fn

  def _eval_steps(self, dataset, element, checkpoint_path, hooks):
    """The steps of one evaluate(), traced, on loaded variables."""
    self._call_hooks = tuple(hooks)
    kind = (_ReplicatedSteps if self.runner.strategy_kind in _PER_REPLICA_KINDS
            else _OneDeviceSteps)
    steps = kind(self, dataset, element)
    self._loaded(estimator_compat.ModeKeys.EVAL, steps.check, checkpoint_path)
    if self._has_hooks():
      with self._tracing_hooks():
        steps = kind(self, dataset, element)
      self._hooks.steps_start()
    self._reset_metric_variables()
    return steps

  def evaluate(self, steps, input_fn, checkpoint_path=None, hooks=(),
               name=None):
    """{'loss', metric names..., 'global_step'} over `steps` batches (all
    of the input when None)."""
    runner = self.runner
    dataset = runner.dataset(estimator_compat.ModeKeys.EVAL, input_fn)
    eval_steps, graph, count, ended, stop = None, None, 0, True, False
    for element in dataset:
      if stop or (steps is not None and count >= steps):
        ended = False
        break
      if eval_steps is None:
        eval_steps = self._eval_steps(dataset, element, checkpoint_path,
                                      hooks)
      for loss, metric_args, hooked in eval_steps.run(element):
        if graph is None:
          graph = self._metrics_graph(metric_args)
        graph.run(graph.updates, graph.feed({'loss': loss,
                                             'args': metric_args}))
        # A hook's request_stop() ends the evaluation after this batch, as
        # it ends a MonitoredSession's loop.
        if self._hooks and self._hooks.after_steps([hooked], self._step(),
                                                   self._step):
          stop = True
      count += 1
    if eval_steps is None:
      raise ValueError('Evaluation input produced no batch.')
    # As Session.run returns them to Estimator: numpy scalars (np.float32,
    # bytes for strings) and arrays.
    result = dict(graph.run(graph.values))
    result.update({k: v[()] if v.ndim == 0 else v
                   for k, v in eval_steps.values().items()})
    result['global_step'] = self._step()
    if self._hooks:
      if ended:
        self._hooks.input_ended(self._step)
      self._hooks.end(self._step)
    path = checkpoint_path or runner.latest_checkpoint()
    eval_summaries.write_eval_summary(
        eval_summaries.eval_dir(runner.model_dir, name), result,
        result['global_step'], path)
    logging.info('Evaluated %d batches of %s.', count, path or
                 'initialised variables (no checkpoint)')
    return result

  def _metric_variables(self, spec):
    """The metric accumulators: the model_fn's local variables (v1 metrics,
    Keras Metrics made in it) and the variables of its Keras Metrics."""
    variables = list(self.runner.module.variables_by_name(local=True).values())
    for metric in (spec.eval_metric_ops or {}).values():
      if _is_keras_metric(metric):
        variables += [v for v in metric.variables
                      if not any(v is known for known in variables)]
    return variables

  def _reset_metric_variables(self):
    """eval_metric_ops accumulators start from zero, as in a new graph."""
    for variable in self._metric_variables(self._spec):
      variable.assign(tf.zeros_like(variable))

  def _metrics_graph(self, metric_arrays):
    metric_fn, tensors = self._spec.eval_metrics or (None, [])
    flat_specs = [host_graph.spec_of(a) for a in metric_arrays]

    def fn(loss, args):
      metrics = {'loss': tf.compat.v1.metrics.mean(loss)}
      if metric_fn is not None:
        metrics.update(host_graph.call_with(
            metric_fn, tf.nest.pack_sequence_as(tensors, args)))
      return metrics

    graph = host_graph.HostGraph(
        fn, {'loss': tf.TensorSpec([], tf.float32), 'args': flat_specs})
    graph.values = {k: v[0] for k, v in graph.outputs.items()}
    graph.updates = [v[1] for v in graph.outputs.values()]
    return graph

  def predict(self, input_fn, checkpoint_path=None, hooks=(),
              yield_single_examples=True, predict_keys=None):
    """Yields one dict of numpy values per example (or per batch), in input
    order; only `predict_keys` when given."""
    runner = self.runner
    dataset = runner.dataset(estimator_compat.ModeKeys.PREDICT, input_fn)
    signature = getattr(dataset, 'element_spec', None)  # Partial batches

    def make_fn():  # too, in one trace.
      return self.distributed_fn(self._replica_predict_step, signature)

    predict_fn = None
    for element in dataset:
      if predict_fn is None:
        predict_fn = self._prepare(make_fn, element, checkpoint_path, hooks)
      with runner.scope():
        outputs = predict_fn(element)
      stop = self._hooks and self._hooks.after_steps(
          [[v.numpy() for v in outputs['hooks']]], self._step(), self._step)
      predictions = outputs['predictions']
      if not isinstance(predictions, dict):
        predictions = {'predictions': predictions}
      arrays = {k: v.numpy() for k, v in predictions.items()
                if predict_keys is None or k in predict_keys}
      if predict_keys is not None and len(arrays) != len(set(predict_keys)):
        missing = sorted(set(predict_keys) - set(arrays))
        raise ValueError(f'predict_keys {missing} are not among the '
                         f'predictions {sorted(predictions)}.')
      if not yield_single_examples:
        yield arrays
      else:
        yield from _single_examples(arrays)
      if stop:  # A hook's request_stop(): this batch was the last.
        break
    else:
      if self._hooks:
        self._hooks.input_ended(self._step)
    if self._hooks:
      self._hooks.end(self._step)


def _single_examples(arrays):
  """Yields {key: example} per example of a batch of predictions."""
  for i in range(predictions_lib.batch_length(arrays)):
    yield {key: value[i] for key, value in arrays.items()}
