"""dnn.py's training graph without Estimator: what TensorFlow itself costs.

The graph a canned DNNClassifier(hidden_units=[128, 64]) builds on the same
feature columns and data (input_layer, two relu layers, one logit, sigmoid
cross-entropy, Adagrad 0.05, a global step), run for --train_steps steps
  --session=plain      in a tf.compat.v1.Session: sess.run([train_op, loss])
  --session=monitored  in TF's own MonitoredTrainingSession with the hooks
                       and cadence Estimator.train uses (NanTensorHook,
                       LoggingTensorHook and global_step/sec every 100 steps,
                       summaries every 100, a checkpoint at the end)
Run as `python plain_session.py` on every lane (no Estimator, no facade),
so the ratio of two lanes is TensorFlow's own. Figures (timing.py): steps/s
after --warmup_steps, train wall, CPU seconds, peak RSS.
"""

from absl import app
from absl import flags
import tensorflow as tf

import synthetic
import timing

flags.DEFINE_enum('session', 'plain', ['plain', 'monitored'],
                  'A bare Session or a MonitoredTrainingSession.')
FLAGS = timing.FLAGS
v1 = tf.compat.v1


def build():
  """(train_op, loss) in the default graph, global step created."""
  v1.set_random_seed(1)
  step = v1.train.get_or_create_global_step()
  features, labels = v1.data.make_one_shot_iterator(
      synthetic.input_fn(FLAGS.batch_size, True)()).get_next()
  dense, _ = synthetic.feature_columns()
  net = v1.feature_column.input_layer(features, dense)
  for units in (128, 64):
    net = v1.layers.dense(net, units, activation=tf.nn.relu)
  logits = v1.layers.dense(net, 1)
  loss = v1.losses.sigmoid_cross_entropy(
      tf.cast(tf.reshape(labels, [-1, 1]), tf.float32), logits)
  v1.summary.scalar('loss', loss)
  train_op = v1.train.AdagradOptimizer(0.05).minimize(loss, global_step=step)
  return train_op, loss


def main(_):
  figures = timing.Figures(FLAGS.out)
  with figures.phase('train'), tf.Graph().as_default():
    train_op, loss = build()
    rate = figures.hook()
    if FLAGS.session == 'plain':
      rate.begin()
      with v1.Session() as session:
        session.run([v1.global_variables_initializer(),
                     v1.tables_initializer()])
        for _ in range(FLAGS.train_steps):
          results = session.run([train_op, loss, rate._step])  # pylint: disable=protected-access
          rate.after_run(None, v1.train.SessionRunValues(
              results=results[2], options=None, run_metadata=None))
    else:
      step = v1.train.get_global_step()
      hooks = [v1.train.StopAtStepHook(last_step=FLAGS.train_steps),
               v1.train.NanTensorHook(loss),
               v1.train.LoggingTensorHook({'loss': loss, 'step': step},
                                          every_n_iter=100), rate]
      with v1.train.MonitoredTrainingSession(
          checkpoint_dir=FLAGS.model_dir, hooks=hooks,
          save_checkpoint_secs=600, save_summaries_steps=100,
          log_step_count_steps=100) as session:
        while not session.should_stop():
          session.run([train_op, loss])
  figures.write()


if __name__ == '__main__':
  app.run(main)
