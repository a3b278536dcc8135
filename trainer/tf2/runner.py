"""Runs an unmodified TPUEstimator model_fn / input_fn pair under tf.distribute.

Implements the controller's runner interface (global_step, train, evaluate,
predict, export) like EstimatorRunner, with TF2 machinery:
  * input: input_fn(params) per input pipeline via
    distribute_datasets_from_function; params['batch_size'] is the
    per-replica batch and params['context'] the tf.distribute.InputContext;
  * training: the model_fn's own train_op (its v1 optimizer, global_step,
    UPDATE_OPS), the loss scaled by 1/replicas as Estimator and
    CrossShardOptimizer do; iterations_per_loop steps per tf.function call;
    the replica step XLA-compiled where the strategy allows it;
  * host side as TPUEstimator: host_call and eval metric_fn run on tensors
    gathered from all replicas (trainer/tf2/host_graph.py);
  * TF1 name-based checkpoints in model_dir (trainer/tf2/name_checkpoints.py);
    scaffold_fn (--init_checkpoint) applies when model_dir has none.
The model_fn sees params['use_tpu'] = False: the strategy, not
CrossShardOptimizer, combines gradients across replicas.
"""

import os
import time

from absl import logging
import numpy as np
import tensorflow as tf

from trainer import progress
from trainer import serving
from trainer.compat import estimator as estimator_compat
from trainer.compat import tf_private
from trainer.guard import nonfinite
from trainer.guard import preemption
from trainer.tf2 import host_graph
from trainer.tf2 import model_fn_adapter
from trainer.tf2 import name_checkpoints
from trainer.tf2 import strategy as strategy_lib

estimator_compat.install()  # Before model code looks the names up.
ModeKeys = estimator_compat.ModeKeys
_MEAN = tf.distribute.ReduceOp.MEAN


def _features_labels(element):
  """(features, labels) of a dataset element; labels None if there are none."""
  if isinstance(element, (tuple, list)) and len(element) == 2:
    return element[0], element[1]
  return element, None


def _plain(fn):
  """fn exempt from AutoGraph: model_fns run as plain Python, as in TF1."""
  return tf.autograph.experimental.do_not_convert(fn)


def _spec_of(array):
  return tf.TensorSpec([None] + list(array.shape[1:]), array.dtype)


class Tf2Runner:
  """train / evaluate / predict / export of a model_fn under one strategy."""

  def __init__(self, params, model_fn, input_fn):
    self._params = params
    self._input_fn = input_fn
    tf.random.set_seed(params['seed'])
    self.strategy, self.strategy_kind = strategy_lib.make_strategy(params)
    self.jit = strategy_lib.supports_jit(self.strategy_kind) and params.get(
        'jit_compile', True)
    self.num_replicas = self.strategy.num_replicas_in_sync
    logging.info('tf2 runner: %s strategy, %d replica(s), jit_compile=%s.',
                 self.strategy_kind, self.num_replicas, self.jit)
    for key in ('train_batch_size', 'eval_batch_size'):
      if params[key] % self.num_replicas:
        raise ValueError(f'--{key}={params[key]} must be divisible by the '
                         f'{self.num_replicas} replicas of the tf2 runner.')
    self.model_dir = params['model_dir']
    if not strategy_lib.is_chief_task():  # Keeps its own copy, apart.
      self.model_dir = os.path.join(params['model_dir'],
                                    f'worker-{strategy_lib.task_index()}')
    with self.strategy.scope():
      self.module = model_fn_adapter.ModelFnModule(model_fn)
    self._model_fn = model_fn
    self._checkpoints = None
    self._built_names = None
    self._train_iterator = None
    self._train_loop = None
    self._host_call = None  # (fn, specs) recorded while tracing.
    self._host_graph = None
    self._scaffold_fn = None
    self._metric_fn = None  # (metric_fn, tensors) recorded while tracing.

  # -- params and input ---------------------------------------------------

  def _batch(self, mode):
    key = 'train_batch_size' if mode == ModeKeys.TRAIN else 'eval_batch_size'
    return self._params[key]

  def model_params(self, mode):
    """params the model_fn sees: per-replica batch, use_tpu False."""
    return dict(self._params, batch_size=self._batch(mode) // self.num_replicas,
                use_tpu=False, model_dir=self.model_dir)

  def _dataset(self, mode):
    global_batch = self._batch(mode)

    def dataset_fn(context):
      params = dict(self._params, mode=mode, context=context,
                    batch_size=context.get_per_replica_batch_size(global_batch))
      return self._input_fn(params)

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  # -- variables and checkpoints -------------------------------------------

  def _call_model_fn(self, features, labels, mode):
    spec = self.module(features, labels, mode, self.model_params(mode))
    if spec.scaffold_fn is not None:
      self._scaffold_fn = spec.scaffold_fn
    return spec

  def variables(self):
    """{TF1 name: numpy value} of every variable made so far."""
    return {name: v.numpy()
            for name, v in self.module.variables_by_name().items()}

  def _after_build(self):
    """Initialises variables made by the latest trace.

    From model_dir's latest checkpoint if there is one; otherwise, the first
    time, with the spec's scaffold_fn (--init_checkpoint), as Estimator does.
    """
    names = self.module.variables_by_name()
    if self._checkpoints is not None and names.keys() == self._built_names:
      return
    first = self._checkpoints is None
    self._built_names = names.keys()
    self._checkpoints = name_checkpoints.NameBasedCheckpoints(
        names, self.model_dir, self._params['keep_checkpoint_max'],
        self.strategy)
    latest = tf.train.latest_checkpoint(self._params['model_dir'])
    if latest:
      self._checkpoints.restore(latest)
    elif first and self._scaffold_fn is not None:
      with self.strategy.scope():
        self.module.run_in_variable_store(self._scaffold_fn)
      logging.info('Initialised variables with the spec\'s scaffold_fn.')

  def save_checkpoint(self):
    """Writes model_dir/model.ckpt-STEP now; returns its prefix."""
    return self._checkpoints.save(self.global_step())

  def global_step(self):
    variable = self.module.variables_by_name().get('global_step')
    if variable is not None:
      return int(variable.numpy())
    path = tf.train.latest_checkpoint(self._params['model_dir'])
    if path is None:
      return 0
    return int(tf.train.load_checkpoint(path).get_tensor('global_step'))

  # -- training -------------------------------------------------------------

  def _replica_train_step(self, features, labels):
    spec = self._call_model_fn(features, labels, ModeKeys.TRAIN)
    if spec.train_op is None or spec.loss is None:
      raise ValueError('model_fn returned no train_op or no loss in TRAIN.')
    host_tensors = []
    if spec.host_call is not None:
      fn, tensors = spec.host_call
      host_tensors = tf.nest.flatten(tensors)
      self._host_call = (fn, tensors)
    with tf.control_dependencies([spec.train_op]):
      loss = tf.identity(spec.loss)
      host_tensors = [tf.identity(t) for t in host_tensors]
    return loss, host_tensors

  def _build_train(self):
    """Traces the step once (creating variables), then the loop function."""
    self._train_iterator = iter(self._dataset(ModeKeys.TRAIN))
    step = _plain(self._replica_train_step)
    if self.jit:
      step = tf.function(step, jit_compile=True, autograph=False)

    def run_step(iterator):
      return self.strategy.run(step, args=_features_labels(next(iterator)))

    with self.strategy.scope(), self.module.creation_scope(), (
        tf_private.estimator_loss_scaling(self.strategy)):
      tf.function(run_step, autograph=False).get_concrete_function(
          self._train_iterator)
    self._after_build()

    strategy = self.strategy
    host_dtypes = [t.dtype for t in tf.nest.flatten(self._host_call[1])
                   ] if self._host_call else []

    def train_loop(iterator, steps):
      def body(i, losses, host):
        loss, host_tensors = run_step(iterator)
        losses = losses.write(i, strategy.reduce(_MEAN, loss, axis=None))
        host = tuple(array.write(i, strategy.gather(t, axis=0))
                     for array, t in zip(host, host_tensors))
        return i + 1, losses, host

      _, losses, host = tf.while_loop(
          lambda i, *_: i < steps, body,
          (tf.constant(0), tf.TensorArray(tf.float32, size=steps),
           tuple(tf.TensorArray(d, size=steps) for d in host_dtypes)))
      return losses.stack(), tuple(array.stack() for array in host)

    self._train_loop = tf.function(train_loop, autograph=False)

  def _run_host_calls(self, host_values):
    if not self._host_call or not host_values:
      return
    fn, tensors = self._host_call
    if self._host_graph is None:
      specs = tf.nest.pack_sequence_as(
          tensors, [_spec_of(v[0]) for v in host_values])
      self._host_graph = host_graph.HostGraph(fn, specs)
      self._host_step = self._host_graph.callable_for(
          self._host_graph.outputs)
    for i in range(host_values[0].shape[0]):
      self._host_step(*[v[i] for v in host_values])

  def train_steps(self, num_steps):
    """Runs `num_steps` steps in loops of <= iterations_per_loop; losses."""
    if self._train_loop is None:
      self._build_train()
    losses = []
    done = 0
    while done < num_steps:
      n = min(self._params['iterations_per_loop'], num_steps - done)
      with self.strategy.scope(), self.module.creation_scope(), (
          tf_private.estimator_loss_scaling(self.strategy)):
        loop_losses, host_values = self._train_loop(self._train_iterator,
                                                    tf.constant(n))
      self._run_host_calls([v.numpy() for v in host_values])
      losses.extend(loop_losses.numpy().tolist())
      done += n
    return np.array(losses, dtype=np.float32)

  def train(self, to_step):
    """Trains until global_step reaches `to_step`, checkpointing as set."""
    if self._train_loop is None:
      self._build_train()
    step = self.global_step()
    every = self._params['save_checkpoints_steps']
    last_time, last_step = time.monotonic(), step
    while step < to_step:
      next_save = (step // every + 1) * every
      n = min(self._params['iterations_per_loop'], to_step - step,
              next_save - step)
      losses = self.train_steps(n)
      step = self.global_step()
      nonfinite.check_losses(losses, step, self._params['model_dir'])
      stop = preemption.requested()  # SIGTERM: save now, return.
      if step % every == 0 or step >= to_step or stop:
        nonfinite.check_arrays(self.variables(), step,
                               self._params['model_dir'])
        self._checkpoints.save(step)
      now = time.monotonic()
      if step - last_step >= self._params['iterations_per_loop'] or (
          step >= to_step):
        values = progress.train_values(
            step - last_step, now - last_time, self._params['train_batch_size'],
            losses[-1], self._params['train_steps'] - step)
        logging.info('%s', progress.format_line('train', step, values))
        last_time, last_step = now, step
      if stop:
        break
    if self._host_graph is not None:
      self._host_graph.flush()

  # -- evaluation and prediction -------------------------------------------

  def _replica_eval_step(self, features, labels):
    spec = self._call_model_fn(features, labels, ModeKeys.EVAL)
    if spec.eval_metrics is None:
      return spec.loss, []
    metric_fn, tensors = spec.eval_metrics
    self._metric_fn = (metric_fn, tensors)
    return spec.loss, tf.nest.flatten(tensors)

  def _distributed_fn(self, replica_fn):
    strategy = self.strategy

    def fn(element):
      features, labels = _features_labels(element)
      outputs = strategy.run(_plain(replica_fn), args=(features, labels))

      def combine(value):  # Scalars (the loss) are averaged, others gathered.
        if strategy.experimental_local_results(value)[0].shape.rank:
          return strategy.gather(value, axis=0)
        return strategy.reduce(_MEAN, value, axis=None)

      return tf.nest.map_structure(combine, outputs)

    return tf.function(fn, autograph=False)

  def _first_call(self, fn, element):
    """Calls fn on the first element, creating variables, then restores."""
    with self.strategy.scope(), self.module.creation_scope():
      fn.get_concrete_function(element)
    if self._checkpoints is None and self._scaffold_fn is None and (
        tf.train.latest_checkpoint(self._params['model_dir']) is None):
      raise ValueError(f'--model_dir={self._params["model_dir"]} has no '
                       'checkpoint to evaluate or predict with.')
    self._after_build()

  def evaluate(self, steps):
    """{'loss', metric names..., 'global_step'} over `steps` batches."""
    self._metric_fn = None
    eval_fn = self._distributed_fn(self._replica_eval_step)
    graph = None
    count = 0
    for element in self._dataset(ModeKeys.EVAL):
      if steps is not None and count >= steps:
        break
      if count == 0:
        self._first_call(eval_fn, element)
      with self.strategy.scope(), self.module.creation_scope():
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
    result['global_step'] = self.global_step()
    return result

  def _metrics_graph(self, metric_arrays):
    metric_fn, tensors = self._metric_fn or (None, [])
    flat_specs = [_spec_of(a) for a in metric_arrays]

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

  def _replica_predict_step(self, features, labels):
    del labels
    spec = self._call_model_fn(features, None, ModeKeys.PREDICT)
    return spec.predictions

  def predict(self):
    """Yields one dict of numpy values per example, in input order."""
    predict_fn = self._distributed_fn(self._replica_predict_step)
    first = True
    for element in self._dataset(ModeKeys.PREDICT):
      if first:
        self._first_call(predict_fn, element)
        first = False
      with self.strategy.scope(), self.module.creation_scope():
        predictions = predict_fn(element)
      if not isinstance(predictions, dict):
        predictions = {'predictions': predictions}
      arrays = {k: v.numpy() for k, v in predictions.items()}
      for i in range(len(next(iter(arrays.values())))):
        yield {k: v[i] for k, v in arrays.items()}

  # -- export ---------------------------------------------------------------

  def export(self, export_dir):
    """SavedModel of the PREDICT graph taking encoded images; its path."""
    path = tf.train.latest_checkpoint(self._params['model_dir'])
    if path is None:
      raise ValueError(f'--model_dir={self._params["model_dir"]} has no '
                       'checkpoint to export.')
    module = model_fn_adapter.ModelFnModule(self._model_fn)
    params = dict(self.model_params(ModeKeys.PREDICT), batch_size=None)

    def serve(image_bytes):
      images = serving.serving_images(image_bytes, params)
      spec = module({'image': images}, None, ModeKeys.PREDICT, params)
      predictions = spec.predictions
      if not isinstance(predictions, dict):
        predictions = {'output': predictions}
      return predictions

    serve = tf.function(serve, autograph=False, input_signature=[
        tf.TensorSpec([None], tf.string, name=serving.SERVING_INPUT_KEY)])
    with module.creation_scope():
      serve.get_concrete_function()
    name_checkpoints.NameBasedCheckpoints(
        {n: v for n, v in module.variables_by_name().items()}, self.model_dir,
        1).restore(path)
    target = os.path.join(export_dir, str(int(time.time())))
    tf.saved_model.save(module, target, signatures={'serving_default': serve})
    return target
