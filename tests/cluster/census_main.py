"""Fixture: a feature-column Estimator program trained on a TF_CONFIG cluster.

Written as teams wrote them for Estimator's parameter-server training: a
model_fn over `tf.compat.v1.feature_column.input_layer` (a numeric column
and an embedding of a vocabulary column) and a hidden layer made with
`get_variable` under a variable partitioner, Adagrad (slot variables),
optionally wrapped in `SyncReplicasOptimizer`; `train_and_evaluate` with a
`LatestExporter`; a RunConfig with or without a `train_distribute` strategy.
Nothing in it knows about the cluster but what RunConfig tells it.

Each training task prints, when its training ends,
`task TYPE:INDEX trained LOCAL_STEPS local steps, last global step STEP`,
so a test sees that every worker trained.
"""

import os
import time

from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

FLAGS = flags.FLAGS
flags.DEFINE_string('model_dir', None, 'Checkpoints, summaries, exports.')
flags.DEFINE_integer('max_steps', 100, 'TrainSpec.max_steps.')
flags.DEFINE_integer('save_checkpoints_steps', 25, 'Checkpoint cadence.')
flags.DEFINE_enum('strategy', 'none', ['none', 'ps', 'mwms'],
                  'RunConfig(train_distribute=): none, tf.compat.v1 '
                  'ParameterServerStrategy, MultiWorkerMirroredStrategy.')
flags.DEFINE_enum('partitioner', 'none', ['none', 'min_max', 'fixed'],
                  'Partitioner of the hidden layer and the embedding.')
flags.DEFINE_bool('sync_replicas', False, 'Wrap the optimizer in '
                  'SyncReplicasOptimizer (one update per all workers).')
flags.DEFINE_integer('max_worker_delay_secs', 2,
                     'RunConfig.experimental_max_worker_delay_secs.')
flags.DEFINE_float('step_secs', 0.0, 'Sleep after each training step, so '
                   'a test can act while training runs.')
flags.DEFINE_string('pace_file', None, 'If set, --step_secs applies only '
                    'while this file exists: a test removes it once it has '
                    'acted, and training runs on at full speed.')
flags.DEFINE_integer('batch_size', 8, 'Batch size.')
flags.DEFINE_integer('keep_checkpoint_max', 5, 'RunConfig.keep_checkpoint_max.')
flags.DEFINE_integer('session_creation_timeout_secs', 7200,
                     'RunConfig.session_creation_timeout_secs.')
flags.DEFINE_bool('graph_mode', False, 'Call tf.compat.v1.disable_eager_'
                  'execution() first, as MultiWorkerMirroredStrategy under '
                  'Estimator requires.')

_COLORS = ('red', 'green', 'blue', 'cyan')
_EXAMPLES = 64


def _data():
  """A deterministic toy problem: y = [x0 + x1 > color bias]."""
  rng = np.random.RandomState(0)
  x = rng.uniform(-1, 1, size=(_EXAMPLES, 2)).astype(np.float32)
  color = np.array([_COLORS[i % len(_COLORS)] for i in range(_EXAMPLES)])
  bias = np.array([0.3 * (i % len(_COLORS)) - 0.45 for i in range(_EXAMPLES)],
                  np.float32)
  label = (x[:, 0] + x[:, 1] > bias).astype(np.int64)
  return {'x': x, 'color': color}, label


def _columns():
  color = tf.feature_column.categorical_column_with_vocabulary_list(
      'color', _COLORS)
  return [tf.feature_column.numeric_column('x', shape=(2,)),
          tf.feature_column.embedding_column(color, dimension=3)]


def _partitioner():
  if FLAGS.partitioner == 'min_max':
    # Shards of at least 16 bytes: [2+3, 16] floats split over the ps tasks.
    return tf.compat.v1.min_max_variable_partitioner(
        max_partitions=2, min_slice_size=16)
  if FLAGS.partitioner == 'fixed':
    return tf.compat.v1.fixed_size_partitioner(2)
  return None


def train_input_fn():
  features, label = _data()
  dataset = tf.data.Dataset.from_tensor_slices((features, label)).repeat()
  return dataset.batch(FLAGS.batch_size)


def eval_input_fn():
  features, label = _data()
  return tf.data.Dataset.from_tensor_slices((features, label)).batch(16)


def serving_input_receiver_fn():
  spec = tf.feature_column.make_parse_example_spec(_columns())
  return tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)()


class _LocalStepsHook(tf.compat.v1.train.SessionRunHook):
  """Counts this task's own steps; prints them when training ends."""

  def __init__(self, task):
    self._task = task
    self._steps = 0
    self._global_step = None

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context, run_values):
    self._steps += 1
    self._global_step = run_values.results
    if FLAGS.step_secs and (FLAGS.pace_file is None or
                            os.path.exists(FLAGS.pace_file)):
      time.sleep(FLAGS.step_secs)

  def end(self, session):
    print(f'task {self._task} trained {self._steps} local steps, last '
          f'global step {self._global_step}', flush=True)


def model_fn(features, labels, mode, params, config):
  v1 = tf.compat.v1
  partitioner = _partitioner()
  with v1.variable_scope('census', partitioner=partitioner):
    net = v1.feature_column.input_layer(features, _columns())
    hidden_w = v1.get_variable('hidden/kernel', [5, 16])
    hidden_b = v1.get_variable('hidden/bias', [16],
                               initializer=v1.zeros_initializer(),
                               partitioner=None)
    logits_w = v1.get_variable('logits/kernel', [16, 2], partitioner=None)
  hidden = tf.nn.relu(tf.matmul(net, hidden_w) + hidden_b)
  logits = tf.matmul(hidden, logits_w)
  classes = tf.argmax(logits, 1)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(
        mode, predictions={'class': classes,
                           'probabilities': tf.nn.softmax(logits)},
        export_outputs={'serving_default': tf.estimator.export.PredictOutput(
            {'class': classes})})
  loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
        'accuracy': v1.metrics.accuracy(labels, classes)})
  optimizer = v1.train.AdagradOptimizer(params['learning_rate'])
  hooks = [_LocalStepsHook(f'{config.task_type}:{config.task_id}')]
  if FLAGS.sync_replicas:
    optimizer = v1.train.SyncReplicasOptimizer(
        optimizer, replicas_to_aggregate=config.num_worker_replicas,
        total_num_replicas=config.num_worker_replicas)
    hooks.append(optimizer.make_session_run_hook(config.is_chief))
  train_op = optimizer.minimize(loss, v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                    training_hooks=hooks)


def _strategy():
  if FLAGS.strategy == 'ps':
    return tf.compat.v1.distribute.experimental.ParameterServerStrategy()
  if FLAGS.strategy == 'mwms':
    return tf.distribute.MultiWorkerMirroredStrategy()
  return None


def main(argv):
  del argv
  if FLAGS.graph_mode:
    tf.compat.v1.disable_eager_execution()
  config = tf.estimator.RunConfig(
      model_dir=FLAGS.model_dir, tf_random_seed=7,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      log_step_count_steps=10, train_distribute=_strategy(),
      keep_checkpoint_max=FLAGS.keep_checkpoint_max,
      session_creation_timeout_secs=FLAGS.session_creation_timeout_secs,
      experimental_max_worker_delay_secs=FLAGS.max_worker_delay_secs)
  print(f'run_config task_type={config.task_type} task_id={config.task_id} '
        f'master={config.master!r} is_chief={config.is_chief} '
        f'num_ps_replicas={config.num_ps_replicas} '
        f'num_worker_replicas={config.num_worker_replicas} '
        f'global_id_in_cluster={config.global_id_in_cluster} '
        f'evaluation_master={config.evaluation_master!r}', flush=True)
  estimator = tf.estimator.Estimator(model_fn, config=config,
                                     params={'learning_rate': 0.1})
  train_spec = tf.estimator.TrainSpec(train_input_fn,
                                      max_steps=FLAGS.max_steps)
  eval_spec = tf.estimator.EvalSpec(
      eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=1,
      exporters=[tf.estimator.LatestExporter('latest',
                                             serving_input_receiver_fn)])
  result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
  print(f'train_and_evaluate returned {result!r}', flush=True)


if __name__ == '__main__':
  logging.set_verbosity(logging.INFO)
  app.run(main)
