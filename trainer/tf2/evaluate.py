"""Evaluation and prediction under the tf2 runner, as TPUEstimator does them.

Each evaluate() or predict() loads a checkpoint (the given one, else
model_dir's latest) through the spec's Scaffold, so an EMA model_fn's
evaluation saver puts the moving averages in place; without a checkpoint
the variables are initialised (Scaffold init_fn), as Estimator does.
Each batch runs the model_fn on every replica in one tf.function; the loss
is averaged over replicas. Metrics come from either spec:
  * TPUEstimatorSpec eval_metrics=(metric_fn, tensors): the tensors are
    gathered from all replicas and metric_fn runs on the host, once, in a
    graph fed with each batch (host_graph.py), as on TPU;
  * EstimatorSpec eval_metric_ops: updated inside the step; their
    accumulators (the model_fn's non-global variables) start from zero in
    each evaluate(), and the values after the last batch are the result.
evaluate() writes the result and the evaluated checkpoint's path to
model_dir/eval (eval_NAME) at its global step, as Estimator does, and runs
the spec's evaluation_hooks and the call's hooks (hooks.py). The first
trace is checked for variable updates nothing fetches (graph_check.py).
"""

import tensorflow as tf

from absl import logging

from trainer.compat import estimator as estimator_compat
from trainer.tf2 import graph_check
from trainer.tf2 import hooks as hooks_lib
from trainer.tf2 import host_graph
from trainer.tf2 import model_fn_adapter
from trainer.tf2 import summaries

ModeKeys = estimator_compat.ModeKeys
_MEAN = tf.distribute.ReduceOp.MEAN


def _metric_value(metric):
  """The value tensor of an eval_metric_ops entry: (value, update) or a
  Keras Metric."""
  if hasattr(metric, 'result') and callable(metric.result):
    return metric.result()
  value, _ = metric
  return value


def _check_metric_ops(metrics, num_replicas):
  """NotImplementedError for tf.compat.v1.metrics over several replicas
  (measured: their variables cannot be created in a replica inside
  tf.function, UnliftableError)."""
  pairs = [name for name, metric in (metrics or {}).items()
           if not callable(getattr(metric, 'result', None))]
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
    if hasattr(metric, 'result') and callable(metric.result):
      variables += list(metric.variables)
    else:
      fetches += list(metric)
  return fetches, variables


class Evaluation:
  """evaluate / predict of a Tf2Runner (its strategy, module, input)."""

  def __init__(self, runner):
    self._runner = runner
    self._spec = None  # The normalised spec of the last trace.
    self._hooks = None  # hooks.HookRunner of the last trace.
    self._call_hooks = ()
    self._checks = graph_check.Recorder()

  def _trace_hooks(self, spec, outputs):
    """Hooks traced on the process's first replica (placeholders on the
    others)."""
    if self._hooks is not None and self._hooks.traced_in_current_graph():
      outputs['hooks'] = hooks_lib.placeholders_like(
          self._hooks.traced_tensors)
      return
    runner = self._runner
    graph = tf.compat.v1.get_default_graph()
    with runner.module.in_call_collections(), graph.name_scope(None):
      hook_runner = hooks_lib.HookRunner(list(spec.hooks) +
                                         list(self._call_hooks))
      outputs['hooks'] = hook_runner.trace()
    self._hooks = hook_runner

  def _replica_eval_step(self, features, labels):
    started = graph_check.Recorder.start()
    spec = self._runner.call_model_fn(features, labels, ModeKeys.EVAL)
    if spec.loss is None:
      raise ValueError('model_fn returned no loss in EVAL.')
    _check_metric_ops(spec.eval_metric_ops, self._runner.num_replicas)
    self._spec = spec
    outputs = {'loss': spec.loss, 'metric_args': [], 'metric_values': {}}
    if spec.eval_metrics is not None:
      outputs['metric_args'] = tf.nest.flatten(spec.eval_metrics[1])
    if spec.eval_metric_ops:
      outputs['metric_values'] = {name: _metric_value(metric) for name, metric
                                  in spec.eval_metric_ops.items()}
    self._trace_hooks(spec, outputs)
    fetches, updated = _metric_fetches(spec.eval_metric_ops)
    self._checks.add(started, [spec.loss] + outputs['metric_args'] + fetches +
                     list(outputs['hooks']), updated)
    return outputs

  def _replica_predict_step(self, features, labels):
    del labels
    started = graph_check.Recorder.start()
    spec = self._runner.call_model_fn(features, None, ModeKeys.PREDICT)
    if spec.predictions is None:
      raise ValueError('model_fn returned no predictions in PREDICT.')
    self._spec = spec
    outputs = {'predictions': spec.predictions}
    self._trace_hooks(spec, outputs)
    self._checks.add(started, tf.nest.flatten(spec.predictions) +
                     list(outputs['hooks']))
    return outputs

  def _distributed_fn(self, replica_fn):
    strategy = self._runner.strategy

    def fn(element):
      features, labels = model_fn_adapter.features_labels(element)
      outputs = strategy.run(model_fn_adapter.plain(replica_fn),
                             args=(features, labels))

      def first(value):  # Already combined across replicas (merge_call).
        return strategy.experimental_local_results(value)[0]

      def gathered(value):
        if strategy.experimental_local_results(value)[0].shape.rank:
          return strategy.gather(value, axis=0)
        return strategy.reduce(_MEAN, value, axis=None)

      combined = {'hooks': [strategy.experimental_local_results(t)[0]
                            for t in outputs.pop('hooks')]}
      if 'metric_values' in outputs:
        combined['metric_values'] = tf.nest.map_structure(
            first, outputs.pop('metric_values'))
      combined.update(tf.nest.map_structure(gathered, outputs))
      return combined

    return tf.function(fn, autograph=False)

  def _step(self):
    """The global step of the loaded variables (of checkpoint_path, not
    necessarily the latest checkpoint)."""
    variable = self._runner.module.variables_by_name().get('global_step')
    return 0 if variable is None else int(variable.numpy())

  def _prepare(self, fn, element, checkpoint_path, hooks):
    """Traces `fn` (creating variables), then loads the checkpoint."""
    runner = self._runner
    self._call_hooks = tuple(hooks)
    with runner.scope():
      concrete = fn.get_concrete_function(element)
    runner.load(self._spec, checkpoint_path)
    self._checks.check(self._spec.mode)
    runner.stale = True  # Training reloads its own state before going on.
    if self._hooks:
      self._hooks.after_create_session(self._step)
    return concrete

  def evaluate(self, steps, input_fn, checkpoint_path=None, hooks=(),
               name=None):
    """{'loss', metric names..., 'global_step'} over `steps` batches (all
    of the input when None)."""
    runner = self._runner
    eval_fn = self._distributed_fn(self._replica_eval_step)
    graph, outputs, count = None, None, 0
    for element in runner.dataset(ModeKeys.EVAL, input_fn):
      if steps is not None and count >= steps:
        break
      if count == 0:
        self._prepare(eval_fn, element, checkpoint_path, hooks)
        self._reset_metric_variables()
      with runner.scope():
        outputs = eval_fn(element)
      if graph is None:
        graph = self._metrics_graph(
            [v.numpy() for v in outputs['metric_args']])
      graph.run(graph.updates, graph.feed({
          'loss': outputs['loss'].numpy(),
          'args': [v.numpy() for v in outputs['metric_args']]}))
      if self._hooks:
        self._hooks.after_steps([[v.numpy() for v in outputs['hooks']]],
                                self._step(), self._step)
      count += 1
    if graph is None:
      raise ValueError('Evaluation input produced no batch.')
    result = {k: float(v) for k, v in graph.run(graph.values).items()}
    result.update({k: v.numpy().item() if v.shape.rank == 0 else v.numpy()
                   for k, v in outputs['metric_values'].items()})
    result['global_step'] = self._step()
    if self._hooks:
      self._hooks.end(self._step)
    path = checkpoint_path or runner.latest_checkpoint()
    summaries.write_eval_summary(summaries.eval_dir(runner.model_dir, name),
                                 result, result['global_step'], path)
    logging.info('Evaluated %d batches of %s.', count, path or
                 'initialised variables (no checkpoint)')
    return result

  def _reset_metric_variables(self):
    """eval_metric_ops accumulators start from zero, as in a new graph."""
    for variable in self._runner.module.variables_by_name(local=True).values():
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
    runner = self._runner
    predict_fn = self._distributed_fn(self._replica_predict_step)
    first = True
    for element in runner.dataset(ModeKeys.PREDICT, input_fn):
      if first:
        self._prepare(predict_fn, element, checkpoint_path, hooks)
        first = False
      with runner.scope():
        outputs = predict_fn(element)
      if self._hooks:
        self._hooks.after_steps([[v.numpy() for v in outputs['hooks']]],
                                self._step(), self._step)
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
        continue
      for i in range(len(next(iter(arrays.values())))):
        yield {k: v[i] for k, v in arrays.items()}
    if self._hooks:
      self._hooks.end(self._step)
