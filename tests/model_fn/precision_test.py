"""--precision=bfloat16: what is bfloat16, what stays float32, and resuming.

Variables (and optimizer slots) are float32, matmuls/convolutions run in
bfloat16, batch-norm statistics, logits and loss are float32, the input
pipeline delivers bfloat16 images, and a float32 checkpoint continues in
bfloat16 (and back) under TPUEstimator with the same names and dtypes.
"""

import pytest
import tensorflow as tf

from input_fn import tfrecord
from model_fn import models
from model_fn.spec import ModeKeys
from tests import testutil
from trainer.models import builtin

BATCH = 4


def _train_graph(params):
  """The TRAIN graph of params' model on a bfloat16 or float32 batch."""
  dtype = tf.bfloat16 if params['precision'] == 'bfloat16' else tf.float32
  graph = tf.Graph()
  with graph.as_default():
    size, channels = params['image_size'], params['image_channels']
    images = tf.zeros([BATCH, size, size, channels], dtype)
    labels = tf.zeros([BATCH], tf.int32)
    spec = builtin.model_fn(params['model'])(
        {'image': images}, labels, ModeKeys.TRAIN,
        dict(params, batch_size=BATCH))
  return graph, spec


def _resnet_params(precision):
  return testutil.base_params(model='resnet', resnet_depth=18, image_size=8,
                              precision=precision, optimizer='momentum')


def _forward_ops(graph, types):
  return [op for op in graph.get_operations() if op.type in types and
          'gradients' not in op.name]


def test_bfloat16_graph_dtypes():
  graph, spec = _train_graph(_resnet_params('bfloat16'))
  with graph.as_default():
    variables = tf.compat.v1.global_variables()
  assert variables and all(v.dtype.base_dtype == tf.float32
                           for v in variables if 'global_step' not in v.name)
  convs = _forward_ops(graph, ('Conv2D',))
  matmuls = _forward_ops(graph, ('MatMul',))
  assert convs and matmuls
  assert all(op.outputs[0].dtype == tf.bfloat16 for op in convs + matmuls)
  # Batch-norm moments are float32.
  moments = _forward_ops(graph, ('Mean',))
  assert any('batch_norm/moments' in op.name for op in moments)
  assert all(op.outputs[0].dtype == tf.float32 for op in moments
             if 'batch_norm/moments' in op.name)
  assert spec.loss.dtype == tf.float32


def test_float32_graph_has_no_bfloat16():
  graph, _ = _train_graph(_resnet_params('float32'))
  assert not [op for op in graph.get_operations()
              if any(t.dtype == tf.bfloat16 for t in op.outputs)]


def test_logits_float32_in_predict():
  params = testutil.base_params(precision='bfloat16')
  with tf.Graph().as_default():
    spec = models.mlp_model_fn(
        {'image': tf.zeros([BATCH, 28, 28, 1], tf.bfloat16)}, None,
        ModeKeys.PREDICT, dict(params, batch_size=BATCH))
  assert spec.predictions['probabilities'].dtype == tf.float32


@pytest.mark.parametrize('precision, dtype', [('bfloat16', tf.bfloat16),
                                              ('float32', tf.float32)])
def test_pipeline_images_in_compute_dtype(precision, dtype):
  params = testutil.base_params(precision=precision, mode='train',
                                extra={'batch_size': BATCH})
  features, _ = next(iter(tfrecord.input_fn(params)))
  assert features['image'].dtype == dtype


def _checkpoint_dtypes(model_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
  return reader.get_variable_to_dtype_map()


@testutil.requires_estimator
def test_switch_precision_and_resume_under_tpu_estimator(tmp_path):
  from input_fn import inputs  # pylint: disable=g-import-not-at-top
  from trainer.runners.estimator import runner as estimator_runner  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path)
  seen = []
  for precision, to_step in (('float32', 3), ('bfloat16', 6),
                             ('float32', 9)):
    params = testutil.base_config(model_dir=model_dir, precision=precision,
                                  num_cores=1, train_steps=9,
                                  save_checkpoints_steps=3)
    runner = estimator_runner.EstimatorRunner(
        params, models.mlp_model_fn, inputs.INPUT_FNS['tfrecord'])
    runner.train(to_step)
    assert runner.global_step() == to_step
    seen.append(_checkpoint_dtypes(model_dir))
  assert seen[0] == seen[1] == seen[2]
  assert seen[0]['mlp/dense1/kernel'] == tf.float32
  assert seen[0]['mlp/dense1/kernel/Adam'] == tf.float32
