"""Evaluation and prediction under the tf2 runner.

Each batch runs the model_fn on every replica in one tf.function; scalars
(the loss) are averaged over replicas, other tensors gathered. As on TPU, the
spec's eval metric_fn runs on the host, once, in a graph fed with each
batch's gathered tensors (host_graph.py), so TF1 tf.compat.v1.metrics work.
"""

import tensorflow as tf

from trainer.compat import estimator as estimator_compat
from trainer.tf2 import host_graph
from trainer.tf2 import model_fn_adapter

ModeKeys = estimator_compat.ModeKeys
_MEAN = tf.distribute.ReduceOp.MEAN


class Evaluation:
  """evaluate / predict of a Tf2Runner (its strategy, module, input)."""

  def __init__(self, runner):
    self._runner = runner
    self._metric_fn = None  # (metric_fn, tensors) recorded while tracing.

  def _replica_eval_step(self, features, labels):
    spec = self._runner.call_model_fn(features, labels, ModeKeys.EVAL)
    if spec.eval_metrics is None:
      return spec.loss, []
    metric_fn, tensors = spec.eval_metrics
    self._metric_fn = (metric_fn, tensors)
    return spec.loss, tf.nest.flatten(tensors)

  def _replica_predict_step(self, features, labels):
    del labels
    spec = self._runner.call_model_fn(features, None, ModeKeys.PREDICT)
    return spec.predictions

  def _distributed_fn(self, replica_fn):
    strategy = self._runner.strategy

    def fn(element):
      features, labels = model_fn_adapter.features_labels(element)
      outputs = strategy.run(model_fn_adapter.plain(replica_fn),
                             args=(features, labels))

      def combine(value):  # Scalars (the loss) are averaged, others gathered.
        if strategy.experimental_local_results(value)[0].shape.rank:
          return strategy.gather(value, axis=0)
        return strategy.reduce(_MEAN, value, axis=None)

      return tf.nest.map_structure(combine, outputs)

    return tf.function(fn, autograph=False)

  def _first_call(self, fn, element):
    """Calls fn on the first element, creating variables, then restores."""
    runner = self._runner
    with runner.scope():
      fn.get_concrete_function(element)
    runner.check_initialised('evaluate or predict with')
    runner.after_build()

  def evaluate(self, steps):
    """{'loss', metric names..., 'global_step'} over `steps` batches (all
    of the input when None)."""
    runner = self._runner
    self._metric_fn = None
    eval_fn = self._distributed_fn(self._replica_eval_step)
    graph = None
    count = 0
    for element in runner.dataset(ModeKeys.EVAL):
      if steps is not None and count >= steps:
        break
      if count == 0:
        self._first_call(eval_fn, element)
      with runner.scope():
        loss, metric_values = eval_fn(element)
      if graph is None:
        graph = self._metrics_graph([v.numpy() for v in metric_values])
      values = {'loss': loss.numpy(),
                'args': [v.numpy() for v in metric_values]}
      graph.run(graph.updates, graph.feed(values))
      count += 1
    if graph is None:
      raise ValueError('Evaluation input produced no batch.')
    result = {k: float(v) for k, v in graph.run(graph.values).items()}
    result['global_step'] = runner.global_step()
    return result

  def _metrics_graph(self, metric_arrays):
    metric_fn, tensors = self._metric_fn or (None, [])
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

  def predict(self):
    """Yields one dict of numpy values per example, in input order."""
    runner = self._runner
    predict_fn = self._distributed_fn(self._replica_predict_step)
    first = True
    for element in runner.dataset(ModeKeys.PREDICT):
      if first:
        self._first_call(predict_fn, element)
        first = False
      with runner.scope():
        predictions = predict_fn(element)
      if not isinstance(predictions, dict):
        predictions = {'predictions': predictions}
      arrays = {k: v.numpy() for k, v in predictions.items()}
      for i in range(len(next(iter(arrays.values())))):
        yield {k: v[i] for k, v in arrays.items()}
