"""A program using tf.estimator's heads in its own model_fn, as teams do.

For every case of CASES (a head, its labels, how it trains) it records what
a user observes, into one JSON file (--out):
  * eagerly: head.loss, head.predictions and head.update_metrics results;
  * under tf.estimator.Estimator (one linear layer from fixed initial
    values): the loss of every training step, the checkpoint's variable
    names and shapes, evaluate()'s metrics, predict()'s predictions, the
    summary tags written in training and evaluation, and the exported
    SavedModel's signatures (method, inputs, outputs) and their outputs for
    serialized tf.Examples.
Run it as `python -m trainer.legacy head_program.py --out=F --work_dir=D`
under TF 2.15 (the real Estimator) and TF 2.20 (the facade);
tests/canned/heads_test.py compares the two files.
"""

import glob
import json
import os

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

FLAGS = flags.FLAGS
flags.DEFINE_string('out', None, 'Where to write the JSON record.')
flags.DEFINE_string('work_dir', None, 'Model dirs and exports go here.')
flags.DEFINE_list('cases', None, 'Only these cases (default: all).')
flags.DEFINE_integer('replicas', 1, 'Train with a MirroredStrategy over this '
                     'many CPU devices (RunConfig.train_distribute).')

N = 12  # Examples; batches of 4.
BATCH = 4
STEPS = 6  # Two epochs.
LEARNING_RATE = 0.05
rng = np.random.RandomState(7)
X = rng.normal(size=(N, 3)).astype(np.float32)
W = rng.uniform(0.5, 2., size=(N, 1)).astype(np.float32)
KERNELS = {dim: rng.normal(scale=0.7, size=(3, dim)).astype(np.float32)
           for dim in (1, 2, 3, 4)}


def _binary_labels():
  return (X[:, :1] + 0.3 * X[:, 1:2] > 0).astype(np.int64)


def _class_ids():
  return np.argmax(X @ KERNELS[3] + rng.normal(size=(N, 3)), axis=1)


def _multi_hot():
  return (X @ KERNELS[3] + 0.5 * rng.normal(size=(N, 3)) > 0).astype(np.int64)


def _names(ids, vocabulary):
  return np.array([[vocabulary[i]] for i in ids.reshape(-1)])


def _sparse_names(multi_hot, vocabulary):
  """Per row, the names of its classes, padded with '' (dropped later)."""
  rows = [[vocabulary[j] for j in range(3) if row[j]] for row in multi_hot]
  return np.array([r + [''] * (3 - len(r)) for r in rows])


def _cases():
  """{name: (head factory, labels, optimizer kind, regularized)}.

  Optimizer kinds: 'keras' (tf.keras optimizer, v2 heads), 'v1' (a
  train_op_fn minimizing with a tf.compat.v1 optimizer), 'v1_optimizer'
  (the v1 heads' optimizer argument). Cases named v1_* use the v1 heads of
  the tf.compat.v1 canned Estimators (tensorflow_estimator's canned.head).
  """
  from tensorflow_estimator.python.estimator.canned import head as v1_heads  # pylint: disable=g-import-not-at-top
  est = tf.estimator
  fc = tf.feature_column
  sum_reduction = tf.losses.Reduction.SUM
  return {
      'binary': (lambda: est.BinaryClassHead(
          weight_column='w', thresholds=(0.3, 0.7)),
                 _binary_labels(), 'keras', True),
      'binary_vocabulary': (lambda: est.BinaryClassHead(
          label_vocabulary=['neg', 'pos'], name='spam',
          loss_reduction=sum_reduction),
                            _names(_binary_labels(), ['neg', 'pos']), 'v1',
                            False),
      'multi_class': (lambda: est.MultiClassHead(
          3, weight_column=fc.numeric_column(
              'w', normalizer_fn=lambda w: 2. * w)),
                      _class_ids(), 'keras', False),
      'multi_class_vocabulary': (lambda: est.MultiClassHead(
          3, label_vocabulary=['a', 'b', 'c'], name='mc'),
                                 _names(_class_ids(), ['a', 'b', 'c']), 'v1',
                                 True),
      'multi_label': (lambda: est.MultiLabelHead(
          3, weight_column='w', thresholds=(0.4, 0.6),
          classes_for_class_based_metrics=[0, 2]),
                      _multi_hot(), 'keras', False),
      'multi_label_sparse_vocabulary': (lambda: est.MultiLabelHead(
          3, label_vocabulary=['r', 'g', 'b'],
          classes_for_class_based_metrics=['g'], name='ml'),
                                        _sparse_names(_multi_hot(),
                                                      ['r', 'g', 'b']),
                                        'v1', False),
      'regression': (lambda: est.RegressionHead(
          label_dimension=2, weight_column='w'),
                     (X @ KERNELS[2] + 0.1).astype(np.float32), 'keras',
                     True),
      'poisson': (lambda: est.PoissonRegressionHead(name='counts'),
                  rng.poisson(2., size=(N, 1)).astype(np.float32), 'v1',
                  False),
      'logistic': (lambda: est.LogisticRegressionHead(weight_column='w'),
                   rng.uniform(size=(N, 1)).astype(np.float32), 'keras',
                   False),
      'multi_head': (lambda: est.MultiHead(
          [est.MultiClassHead(3, name='cls'), est.RegressionHead(name='reg')],
          head_weights=[1., 0.5]),
                     {'cls': _class_ids().reshape(-1, 1),
                      'reg': rng.normal(size=(N, 1)).astype(np.float32)},
                     'v1', False),
      'v1_binary': (lambda: v1_heads._binary_logistic_head_with_sigmoid_cross_entropy_loss(  # pylint: disable=protected-access
          weight_column='w', thresholds=(0.3, 0.7)),
                    _binary_labels(), 'v1_optimizer', True),
      'v1_multi_class_vocabulary': (
          lambda: v1_heads._multi_class_head_with_softmax_cross_entropy_loss(  # pylint: disable=protected-access
              3, label_vocabulary=['a', 'b', 'c'], name='mc',
              loss_reduction=tf.compat.v1.losses.Reduction.MEAN),
          _names(_class_ids(), ['a', 'b', 'c']), 'v1', False),
      'v1_regression': (lambda: v1_heads._regression_head(  # pylint: disable=protected-access
          weight_column='w', label_dimension=2, inverse_link_fn=tf.math.exp),
                        (X @ KERNELS[2] + 0.1).astype(np.float32),
                        'v1_optimizer', True),
      'v1_binary_or_multi_class': (
          lambda: v1_heads._binary_logistic_or_multi_class_head(  # pylint: disable=protected-access
              3, weight_column=None, label_vocabulary=None,
              loss_reduction=tf.compat.v1.losses.Reduction.SUM_OVER_BATCH_SIZE),
          _class_ids(), 'v1', False),
  }


def _jsonable(value):
  """Numbers, strings (bytes decoded), lists and str-keyed dicts."""
  if isinstance(value, dict):
    return {('/'.join(k) if isinstance(k, tuple) else str(k)): _jsonable(v)
            for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_jsonable(v) for v in value]
  if isinstance(value, bytes):
    return value.decode()
  if isinstance(value, np.ndarray):
    return _jsonable(value.tolist())
  if isinstance(value, np.generic):
    return _jsonable(value.item())
  if tf.is_tensor(value):
    return _jsonable(value.numpy())
  return value


def _labels_tensor(labels, name):
  """Labels as the model_fn gets them (string rows with '' -> sparse)."""
  if name == 'multi_label_sparse_vocabulary':
    return tf.sparse.from_dense(tf.convert_to_tensor(labels))
  if isinstance(labels, dict):
    return {k: tf.convert_to_tensor(v) for k, v in labels.items()}
  return tf.convert_to_tensor(labels)


def _eager(name, head, labels):
  """head.loss, predictions and metrics, run eagerly on the whole data."""
  features = {'x': X, 'w': W}
  logits = tf.convert_to_tensor(X @ KERNELS[head.logits_dimension])
  labels = _labels_tensor(labels, name)
  metrics = head.update_metrics(head.metrics(), features, logits, labels)
  return {'loss': head.loss(labels, logits, features=features),
          'predictions': head.predictions(logits),
          'metrics': {k: m.result() for k, m in metrics.items()}}


def _input_fn(labels, name, repeat):
  def input_fn():
    data = tf.data.Dataset.from_tensor_slices(({'x': X, 'w': W}, labels))
    data = data.repeat(repeat).batch(BATCH)
    if name == 'multi_label_sparse_vocabulary':
      data = data.map(lambda f, l: (f, tf.sparse.from_dense(l)))
    return data
  return input_fn


class _LossRecorder(tf.compat.v1.train.SessionRunHook):

  def __init__(self, loss, losses):
    self._loss = loss
    self._losses = losses

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    self._losses.append(float(run_values.results))


def _model_fn(head_fn, optimizer_kind, regularized, losses):

  def model_fn(features, labels, mode):
    head = head_fn()
    logits = tf.compat.v1.layers.dense(
        features['x'], head.logits_dimension, name='logits',
        kernel_initializer=tf.compat.v1.constant_initializer(
            KERNELS[head.logits_dimension]),
        bias_initializer=tf.compat.v1.zeros_initializer())
    variables = tf.compat.v1.trainable_variables()
    regularization = None
    if regularized:
      regularization = [0.01 * tf.nn.l2_loss(variables[0])]
    kwargs = {}
    if optimizer_kind == 'v1_optimizer':
      kwargs = {'optimizer': tf.compat.v1.train.GradientDescentOptimizer(
          LEARNING_RATE)}
    elif optimizer_kind == 'keras':
      optimizer = tf.keras.optimizers.legacy.SGD(LEARNING_RATE)
      optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
      kwargs = {'optimizer': optimizer, 'trainable_variables': variables}
    else:
      def train_op_fn(loss):
        return tf.compat.v1.train.GradientDescentOptimizer(
            LEARNING_RATE).minimize(
                loss, global_step=tf.compat.v1.train.get_global_step())
      kwargs = {'train_op_fn': train_op_fn}
    spec = head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        regularization_losses=regularization, **kwargs)
    if mode == tf.estimator.ModeKeys.TRAIN:
      spec = spec._replace(training_hooks=[_LossRecorder(spec.loss, losses)])
    return spec

  return model_fn


def _summary_tags(directory):
  tags = set()
  for path in glob.glob(os.path.join(directory, 'events.out.tfevents.*')):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(v.tag for v in event.summary.value)
  return sorted(tags)


def _examples():
  return [tf.train.Example(features=tf.train.Features(feature={
      'x': tf.train.Feature(float_list=tf.train.FloatList(value=row))
  })).SerializeToString() for row in X[:3]]


def _signatures(export_dir):
  """{signature: {method, inputs, outputs: {key: (dtype, value)}}}."""
  found = {}
  with tf.Graph().as_default(), tf.compat.v1.Session() as session:
    meta = tf.compat.v1.saved_model.loader.load(session, ['serve'],
                                                export_dir)
    for key, signature in sorted(meta.signature_def.items()):
      feeds = {info.name: _examples() for info in signature.inputs.values()}
      outputs = {k: info.name for k, info in signature.outputs.items()}
      values = session.run(outputs, feed_dict=feeds)
      found[key] = {
          'method': signature.method_name,
          'inputs': sorted(signature.inputs),
          'outputs': {k: [info.name, tf.dtypes.as_dtype(info.dtype).name,
                          _jsonable(values[k])]
                      for k, info in signature.outputs.items()}}
  return found


def _estimator(name, head_fn, labels, optimizer_kind, regularized):
  model_dir = os.path.join(FLAGS.work_dir, name)
  losses = []
  config = None
  if FLAGS.replicas > 1:
    # Enough inter-op threads for the replicas' collectives (on a 2-core
    # machine TF's default pool deadlocks the reference's all-reduce).
    config = tf.estimator.RunConfig(
        train_distribute=tf.distribute.MirroredStrategy(
            [f'/cpu:{i}' for i in range(FLAGS.replicas)]),
        session_config=tf.compat.v1.ConfigProto(
            inter_op_parallelism_threads=4 * FLAGS.replicas,
            device_count={"CPU": FLAGS.replicas}, allow_soft_placement=True))
  estimator = tf.estimator.Estimator(
      _model_fn(head_fn, optimizer_kind, regularized, losses),
      model_dir=model_dir, config=config)
  estimator.train(_input_fn(labels, name, repeat=None), steps=STEPS)
  metrics = estimator.evaluate(_input_fn(labels, name, repeat=1))
  predictions = list(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({'x': X, 'w': W}).batch(
          BATCH)))
  reader = tf.train.load_checkpoint(model_dir)
  export_dir = estimator.export_saved_model(
      os.path.join(FLAGS.work_dir, name + '_export'),
      tf.estimator.export.build_parsing_serving_input_receiver_fn(
          {'x': tf.io.FixedLenFeature([3], tf.float32)}))
  return {
      'losses': losses, 'metrics': metrics, 'predictions': predictions,
      'variables': reader.get_variable_to_shape_map(),
      'train_summaries': _summary_tags(model_dir),
      'eval_summaries': _summary_tags(os.path.join(model_dir, 'eval')),
      'signatures': _signatures(export_dir)}


def main(argv):
  del argv
  if FLAGS.replicas > 1:
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices('CPU')[0],
        [tf.config.LogicalDeviceConfiguration()] * FLAGS.replicas)
  record = {}
  for name, (head_fn, labels, optimizer_kind, regularized) in (
      _cases().items()):
    if FLAGS.cases and name not in FLAGS.cases:
      continue
    record[name] = {'estimator': _jsonable(_estimator(
        name, head_fn, labels, optimizer_kind, regularized))}
    if not name.startswith('v1_'):  # v1 heads run in a TF1 graph only.
      record[name]['eager'] = _jsonable(_eager(name, head_fn(), labels))
  with open(FLAGS.out, 'w') as f:
    json.dump(record, f, indent=1, sort_keys=True)


if __name__ == '__main__':
  flags.mark_flags_as_required(['out', 'work_dir'])
  app.run(main)
