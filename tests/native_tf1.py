"""TF1 reference runs for the native tests: the built-in model_fn in a Graph.

Builds model_fn.models' TRAIN graph on fixed batches, trains it with a
Session, saves name-based checkpoints (model.ckpt-N, as both TF1 runners
write them) and reports per-step losses and logits, so native runs can be
compared with it from the same converted state.
"""

import os

from model_fn import mlp
from model_fn import precision
from model_fn import resnet
from model_fn.spec import ModeKeys
import numpy as np
import tensorflow as tf
from trainer.models import builtin

NETWORKS = {'mlp': mlp.mlp, 'resnet': resnet.resnet}


def batches(params, count, batch_size=4, seed=0):
  """`count` fixed (images, labels) numpy batches of params' image shape."""
  rng = np.random.RandomState(seed)
  size, channels = params['image_size'], params['image_channels']
  return [(rng.uniform(-1, 1, [batch_size, size, size, channels]
                       ).astype(np.float32),
           rng.randint(0, params['num_classes'], [batch_size]
                       ).astype(np.int32)) for _ in range(count)]


class TF1Run:
  """The TF1 model_fn's TRAIN graph and eval logits in one Graph/Session."""

  def __init__(self, params, batch_shape, seed=0):
    self.params = dict(params, model_dir=None, use_tpu=False)
    self.graph = tf.Graph()
    with self.graph.as_default():
      tf.compat.v1.set_random_seed(seed)
      self.images = tf.compat.v1.placeholder(tf.float32, batch_shape)
      self.labels = tf.compat.v1.placeholder(tf.int32, batch_shape[:1])
      spec = builtin.model_fn(self.params['model'])(
          {'image': self.images}, self.labels, ModeKeys.TRAIN, self.params)
      self.loss, self.train_op = spec.loss, spec.train_op
      with tf.compat.v1.variable_scope('', reuse=True):
        with precision.precision_scope(self.params):
          logits = NETWORKS[self.params['model']](
              tf.cast(self.images, precision.compute_dtype(self.params)),
              False, self.params)
      self.eval_logits = tf.cast(logits, tf.float32)
      self.saver = tf.compat.v1.train.Saver()
      self.session = tf.compat.v1.Session(graph=self.graph)
      self.session.run(tf.compat.v1.global_variables_initializer())

  def _feed(self, batch):
    return {self.images: batch[0], self.labels: batch[1]}

  def train(self, batches_):
    """Runs one step per batch; the per-step losses."""
    return np.array([self.session.run([self.train_op, self.loss],
                                      self._feed(b))[1] for b in batches_])

  def logits(self, images):
    return self.session.run(self.eval_logits, {self.images: images})

  def save(self, model_dir):
    """Writes model_dir/model.ckpt-STEP; its prefix."""
    with self.graph.as_default():
      step = self.session.run(tf.compat.v1.train.get_global_step())
      return self.saver.save(self.session,
                             os.path.join(model_dir, 'model.ckpt'),
                             global_step=int(step))

  def close(self):
    self.session.close()
