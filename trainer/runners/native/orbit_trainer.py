"""Orbit trainer and evaluator of the native models.

NativeTrainer (orbit.StandardTrainer) runs model_fn.native.classifier's
train step under the strategy, `steps` of them in one tf.while_loop, and
records each step's loss (mean over replicas) for the runner, and the TF1
host_call's summaries, `train/loss` and `train/learning_rate` at the step's
global_step before its update (as TPUEstimator's host_call writes them),
into the summary writer it is given. NativeEvaluator
(orbit.StandardEvaluator) accumulates the TF1 eval metrics: `loss` (mean of
the batch losses), `top_1_accuracy` and `top_5_accuracy` (more than 5
classes), as Keras Mean metrics summed across replicas.
"""

from model_fn import metrics as tf1_metrics
from model_fn import summaries
from model_fn.native import classifier
from model_fn.native.legacy_keras import keras
import orbit
import tensorflow as tf

_MEAN = tf.distribute.ReduceOp.MEAN


def _features_labels(element):
  if not (isinstance(element, (tuple, list)) and len(element) == 2):
    raise ValueError('The input_fn must yield (features, labels) pairs for '
                     f'training and evaluation, got {type(element).__name__}.')
  return element[0], element[1]


class NativeTrainer(orbit.StandardTrainer):
  """Trains `model` with `optimizer` on `dataset` (a distributed dataset).

  `max_steps_per_loop`: the most steps one train(num_steps) call runs (the
  size of the per-step loss record). `jit_compile`: XLA-compile the replica
  step (forward, backward and update). `summary_writer`: where the per-step
  scalars go (None: not written).
  """

  def __init__(self, model, optimizer, dataset, params, *, strategy,
               max_steps_per_loop, jit_compile=False, summary_writer=None):
    if not isinstance(max_steps_per_loop, int) or max_steps_per_loop < 1:
      raise ValueError(f'`max_steps_per_loop` ({max_steps_per_loop}) must be '
                       'a positive integer.')
    self.model, self.optimizer = model, optimizer
    self._params = params
    self._strategy = strategy
    self._summary_writer = summary_writer
    self._capacity = max_steps_per_loop
    # Host-side record of this loop's losses; not part of any checkpoint.
    self._losses = tf.Variable(tf.zeros([max_steps_per_loop]),
                               trainable=False, name='loop_losses')
    self._count = tf.Variable(0, trainable=False, name='loop_count')

    def replica_step(features, labels):
      return classifier.train_step(model, optimizer,
                                   classifier.images_of(features), labels,
                                   params)

    self._replica_step = (tf.function(replica_step, jit_compile=True)
                          if jit_compile else replica_step)
    super().__init__(dataset, orbit.StandardTrainerOptions(
        use_tf_function=True, use_tf_while_loop=True))

  def train(self, num_steps):
    """Runs `num_steps` steps (a scalar int tensor); the loop's last loss."""
    steps = int(num_steps)
    if not 1 <= steps <= self._capacity:
      raise ValueError(f'`num_steps` ({steps}) must be in [1, '
                       f'{self._capacity}] (max_steps_per_loop).')
    if self._summary_writer is None:
      return super().train(num_steps)
    with self._summary_writer.as_default(), tf.summary.record_if(True):
      output = super().train(num_steps)
    self._summary_writer.flush()
    return output

  def train_loop_begin(self):
    self._count.assign(0)

  def train_step(self, iterator):
    features, labels = _features_labels(next(iterator))
    # The TF1 host_call's step and rate: global_step before this update.
    step = tf.identity(self.optimizer.iterations)
    learning_rate = tf.identity(self.optimizer.learning_rate)
    with tf.control_dependencies([step, learning_rate]):
      per_replica = self._strategy.run(self._replica_step,
                                       args=(features, labels))
    loss = self._strategy.reduce(_MEAN, per_replica, axis=None)
    tf.summary.scalar(summaries.LOSS_TAG, loss, step=step)
    tf.summary.scalar(summaries.LEARNING_RATE_TAG, learning_rate, step=step)
    self._losses.scatter_nd_update(tf.reshape(self._count, [1, 1]),
                                   tf.reshape(loss, [1]))
    self._count.assign_add(1)

  def train_loop_end(self):
    return {'loss': self._losses[self._count - 1]}

  def loop_losses(self):
    """float32 numpy losses of the steps of the last train() call."""
    return self._losses.numpy()[:int(self._count.numpy())]


class NativeEvaluator(orbit.StandardEvaluator):
  """Evaluates `model` on `dataset`; {'loss', 'top_1_accuracy', ...}."""

  def __init__(self, model, dataset, params, *, strategy, num_classes):
    self.model = model
    self._params = params
    self._strategy = strategy
    names = ['loss', 'top_1_accuracy']
    if num_classes > tf1_metrics.TOP_K:
      names.append('top_5_accuracy')
    with strategy.scope():
      self.metrics = {n: keras.metrics.Mean(n, dtype=tf.float32)
                      for n in names}
    super().__init__(dataset, orbit.StandardEvaluatorOptions(
        use_tf_function=True, recreate_iterator_for_each_eval=True))

  def eval_begin(self):
    for metric in self.metrics.values():
      metric.reset_state()

  def eval_step(self, iterator):
    features, labels = _features_labels(next(iterator))

    def replica_step(features, labels):
      loss, logits = classifier.loss_and_logits(
          self.model, classifier.images_of(features), labels, self._params,
          training=False)
      self.metrics['loss'].update_state(loss)
      for name, correct in classifier.correct_predictions(labels,
                                                          logits).items():
        self.metrics[name].update_state(correct)

    self._strategy.run(replica_step, args=(features, labels))

  def eval_end(self):
    return {name: metric.result() for name, metric in self.metrics.items()}
