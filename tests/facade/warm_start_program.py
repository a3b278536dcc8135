"""WarmStartSettings(var_name_to_vocab_info=...) under MirroredStrategy (2
replicas), recording the warm-started variables, as JSON.

Run it as `python -m trainer.legacy warm_start_program.py --out=F
--work_dir=D` on TF 2.15 (the real Estimator: regenerate.py writes
golden/warm_start.json) and on TF >= 2.16 (the facade's tf2 runner:
warm_start_test.py compares). A checkpoint holds an embedding `emb` over
the vocabulary a, b, c and a `dense` kernel; the Estimator's model has
`emb` over c, a, d, b plus one OOV bucket (remapped by a VocabInfo, new
rows from its backup initializer) and `dense` warm-started as is; with a
learning rate of 0 its first checkpoint holds the warm-started values.
Cells: with train_distribute (the strategy made eagerly; TF 2.15's
Session sees both CPUs through session_config's device_count), and
without; `unused_vocab` (and `mirrored_unused_vocab`) records the error of
a VocabInfo for a variable that is not warm-started.
"""

import json
import os
import sys

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# pylint: disable=g-import-not-at-top,wrong-import-position
from tests.conformance import observe
from trainer.runtime import strategy as strategy_lib
# pylint: enable=g-import-not-at-top,wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string('out', None, 'Where to write the JSON record.')
flags.DEFINE_string('work_dir', None, 'Model dirs and files go here.')

v1 = tf.compat.v1


def _files(work_dir):
  """(checkpoint path, old vocab file, new vocab file)."""
  old_vocab = os.path.join(work_dir, 'old_vocab.txt')
  new_vocab = os.path.join(work_dir, 'new_vocab.txt')
  with open(old_vocab, 'w') as f:
    f.write('a\nb\nc\n')
  with open(new_vocab, 'w') as f:
    f.write('c\na\nd\nb\n')
  path = os.path.join(work_dir, 'base', 'model.ckpt')
  with tf.Graph().as_default():
    v1.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name='emb')
    v1.Variable(np.full([2, 1], 0.25, np.float32), name='dense')
    with v1.Session() as session:
      session.run(v1.global_variables_initializer())
      v1.train.Saver().save(session, path)
  return path, old_vocab, new_vocab


def _model_fn(features, labels, mode):
  emb = v1.get_variable('emb', [5, 2], initializer=v1.zeros_initializer())
  dense = v1.get_variable('dense', [2, 1], initializer=v1.ones_initializer())
  logits = tf.matmul(tf.nn.embedding_lookup(emb, features['ids']), dense)
  loss = tf.reduce_mean(tf.square(logits - labels))
  train_op = v1.train.GradientDescentOptimizer(0.0).minimize(
      loss, v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
  return tf.data.Dataset.from_tensor_slices(
      ({'ids': np.array([0, 1, 2, 3], np.int64)},
       np.ones([4, 1], np.float32))).repeat().batch(2)


def _settings(files, warm=('emb', 'dense')):
  path, old_vocab, new_vocab = files
  info = tf.estimator.VocabInfo(
      new_vocab=new_vocab, new_vocab_size=4, num_oov_buckets=1,
      old_vocab=old_vocab, old_vocab_size=3,
      backup_initializer=v1.ones_initializer())
  return tf.estimator.WarmStartSettings(
      path, vars_to_warm_start=list(warm),
      var_name_to_vocab_info={'emb': info})


def run_cell(name, files, work_dir):
  settings = {}
  if name.startswith('mirrored'):
    strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
    settings = dict(train_distribute=strategy,
                    session_config=v1.ConfigProto(device_count={'CPU': 2}))
  model_dir = os.path.join(work_dir, name)
  est = tf.estimator.Estimator(
      _model_fn, model_dir=model_dir,
      config=tf.estimator.RunConfig(**settings),
      warm_start_from=_settings(files, ('dense',) if name.endswith(
          'unused_vocab') else ('emb', 'dense')))
  try:
    est.train(_input_fn, steps=1)
  except ValueError as e:
    return {'error': [type(e).__name__, str(e)]}
  found = observe.checkpoint(model_dir)['variables']
  return {name: found[name] for name in ('emb', 'dense')}


def main(argv):
  del argv
  os.makedirs(FLAGS.work_dir, exist_ok=True)
  v1.logging.set_verbosity(v1.logging.ERROR)
  files = _files(FLAGS.work_dir)
  results = {name: run_cell(name, files, FLAGS.work_dir)
             for name in ('mirrored', 'one_device', 'unused_vocab',
                          'mirrored_unused_vocab')}
  with open(FLAGS.out, 'w') as f:
    json.dump(results, f, indent=1, sort_keys=True)
  sys.stdout.flush()
  os._exit(0)  # pylint: disable=protected-access


if __name__ == '__main__':
  flags.mark_flags_as_required(['out', 'work_dir'])
  strategy_lib.split_cpu(2)
  app.run(main)
