"""cluster.py's training without Estimator: what a ps cluster itself costs.

custom.py's training graph (dense 16-128-64-4, sparse softmax
cross-entropy, Adam 1e-3, a global step) built as Estimator builds it on a
TF_CONFIG cluster of chief, workers and ps: a `tf.distribute.Server` per
task, variables placed by `replica_device_setter`, Estimator's device
filters, each worker started (index + 1) * 5 s after the chief as
Estimator delays them, and TF's own MonitoredTrainingSession with a
StopAtStepHook on every worker task. ps tasks join their server. Run as
`python cluster_session.py` on every lane (no Estimator, no facade;
bench/facade.py starts the tasks), so the ratio of two lanes is
TensorFlow's own. Figures (timing.py) on the chief: global steps/s after
--warmup_steps, train wall, CPU seconds, peak RSS.
"""

import json
import os
import time

from absl import app
import tensorflow as tf

import synthetic
import timing

FLAGS = timing.FLAGS
v1 = tf.compat.v1
_DELAY_SECS_PER_WORKER = 5  # tensorflow_estimator's training.py.


def build(cluster, task_type, task_index):
  """(train_op, loss) in the default graph, variables on the ps."""
  v1.set_random_seed(1)
  worker = f'/job:{task_type}/task:{task_index}'
  with v1.device(v1.train.replica_device_setter(
      worker_device=worker, cluster=cluster)):
    step = v1.train.get_or_create_global_step()
    features, labels = v1.data.make_one_shot_iterator(
        synthetic.dense_input_fn(FLAGS.batch_size, True)()).get_next()
    net = features['x']
    for units in (128, 64):
      net = v1.layers.dense(net, units, activation=tf.nn.relu)
    logits = v1.layers.dense(net, 4)
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = v1.train.AdamOptimizer(1e-3).minimize(loss, global_step=step)
  return train_op, loss


def main(_):
  tf_config = json.loads(os.environ['TF_CONFIG'])
  cluster = tf.train.ClusterSpec(tf_config['cluster'])
  task_type = tf_config['task']['type']
  task_index = tf_config['task'].get('index', 0)
  server = tf.distribute.Server(cluster, job_name=task_type,
                                task_index=task_index, start=True)
  if task_type == 'ps':
    server.join()
    return
  figures = timing.Figures(FLAGS.out)
  is_chief = task_type == 'chief'
  if not is_chief:
    time.sleep((task_index + 1) * _DELAY_SECS_PER_WORKER)
  config = v1.ConfigProto(device_filters=[
      '/job:ps', f'/job:{task_type}/task:{task_index}'])
  with figures.phase('train'), tf.Graph().as_default():
    train_op, loss = build(cluster, task_type, task_index)
    hooks = [v1.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    if is_chief:
      hooks.append(figures.hook())
    with v1.train.MonitoredTrainingSession(
        master=server.target, is_chief=is_chief,
        checkpoint_dir=FLAGS.model_dir, hooks=hooks, config=config,
        save_checkpoint_secs=600, save_summaries_steps=100,
        log_step_count_steps=100) as session:
      while not session.should_stop():
        session.run([train_op, loss])
  figures.write()


if __name__ == '__main__':
  app.run(main)
