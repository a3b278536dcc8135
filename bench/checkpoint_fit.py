"""What checking a checkpoint against the model costs before a restore
(trainer/guard/checkpoint_fit.py), on ResNet-50's checkpoint.

  python -m bench.checkpoint_fit            # ResNet-50, its Momentum slots
  python -m bench.checkpoint_fit --smoke    # the MLP: that it runs (CI)

Builds the built-in model's TRAIN graph (ImageNet shapes, 1000 classes,
--optimizer=momentum), saves its checkpoint once, then times, --repeats
times each: reading the checkpoint's map (tf.train.load_checkpoint and its
shape and dtype maps: what the check reads), the whole check_saver (that
read, the graph's variables as the Saver keys them, the comparison), and,
for scale, a restore of the same checkpoint. Printed: the variable count,
the checkpoint's size, and the median (min-max) milliseconds of each.
"""

import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup

if __name__ == '__main__':  # Before TensorFlow's first import.
  startup.prepare(sys.argv)

import os
import statistics
import tempfile
import time

from absl import app
from absl import flags
import tensorflow as tf

from model_fn.spec import ModeKeys
from trainer import config as config_lib
from trainer.guard import checkpoint_fit
from trainer.models import builtin

FLAGS = flags.FLAGS
flags.DEFINE_bool('smoke', False, 'The MLP instead of ResNet-50: seconds.')
flags.DEFINE_integer('repeats', 20, 'Timings of each measure.')

_v1 = tf.compat.v1


def _params():
  if FLAGS.smoke:
    settings = dict(model='mlp', image_size=28, image_channels=1,
                    num_classes=10, mlp_hidden_units=[128])
  else:
    settings = dict(model='resnet', resnet_depth=50, resnet_stem='imagenet',
                    image_size=224, image_channels=3, num_classes=1000)
  params = config_lib.Config(optimizer='momentum', **settings).as_params()
  params.update(batch_size=2, use_tpu=False)
  return params


def _train_graph(params):
  graph = tf.Graph()
  with graph.as_default():
    size, channels = params['image_size'], params['image_channels']
    images = tf.zeros([2, size, size, channels])
    labels = tf.zeros([2], tf.int32)
    builtin.model_fn(params['model'])({'image': images}, labels,
                                      ModeKeys.TRAIN, params)
  return graph


def _timed(fn):
  times = []
  for _ in range(FLAGS.repeats):
    start = time.perf_counter()
    fn()
    times.append((time.perf_counter() - start) * 1000)
  return (f'{statistics.median(times):8.2f} ms  '
          f'({min(times):.2f}-{max(times):.2f})')


def _read_map(path):
  reader = tf.train.load_checkpoint(path)
  reader.get_variable_to_shape_map()
  reader.get_variable_to_dtype_map()


def main(argv):
  del argv
  params = _params()
  graph = _train_graph(params)
  with tempfile.TemporaryDirectory() as directory:
    with graph.as_default():
      saver = _v1.train.Saver(sharded=True)
      with _v1.Session() as session:
        session.run(_v1.global_variables_initializer())
        path = saver.save(session, os.path.join(directory, 'model.ckpt'))
      count = len(tf.train.list_variables(path))
      size = sum(os.path.getsize(os.path.join(directory, n))
                 for n in os.listdir(directory) if n.startswith('model.'))
      name = 'mlp' if FLAGS.smoke else 'ResNet-50'
      print(f'{name} checkpoint: {count} variables, {size / 2**20:.1f} MiB')
      print(f'read the checkpoint map     {_timed(lambda: _read_map(path))}')
      print('check_saver (whole check)  ' + _timed(
          lambda: checkpoint_fit.check_saver(saver, path)))
      with _v1.Session() as session:
        print('restore, for scale         ' + _timed(
            lambda: saver.restore(session, path)))


if __name__ == '__main__':
  app.run(main)
