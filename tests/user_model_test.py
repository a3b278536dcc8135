"""A team's own model_fn and input_fn, living outside this repository."""

import re
import textwrap

from tests import testutil

pytestmark = testutil.requires_estimator

# A legacy model_fn as teams write them: TPUEstimatorSpec and ModeKeys from
# tf itself, its own get_variable weights, optimizer and metric_fn.
USER_MODULE = '''
import tensorflow as tf

def model_fn(features, labels, mode, params):
  x = tf.reshape(features['image'], [-1, 28 * 28])
  w = tf.compat.v1.get_variable('linear/w', [784, 10])
  b = tf.compat.v1.get_variable('linear/b', [10],
                                initializer=tf.compat.v1.zeros_initializer())
  logits = tf.matmul(x, w) + b
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
        mode, predictions={'classes': tf.argmax(logits, 1)})
  loss = tf.reduce_mean(
      tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                     logits=logits))
  if mode == tf.estimator.ModeKeys.EVAL:
    def metric_fn(labels, logits):
      return {'accuracy': tf.compat.v1.metrics.accuracy(
          labels, tf.argmax(logits, 1))}
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
        mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
  if params['use_tpu']:
    optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)
  train_op = optimizer.minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss,
                                                     train_op=train_op)

def input_fn(params):
  images = tf.random.stateless_uniform([params['batch_size'], 28, 28, 1],
                                       seed=[1, params['mode'] == 'train'])
  labels = tf.cast(tf.reduce_sum(images, [1, 2, 3]) > 392.0, tf.int32)
  dataset = tf.data.Dataset.from_tensors(({'image': images}, labels))
  return dataset.repeat() if params['mode'] == 'train' else dataset
'''


def _write_module(tmp_path):
  package = tmp_path / 'team_code'
  package.mkdir()
  (package / 'linear_model.py').write_text(textwrap.dedent(USER_MODULE))
  return package


def test_model_and_input_by_module_name(tmp_path):
  package = _write_module(tmp_path)
  result = testutil.run_main(
      ['--model=linear_model:model_fn', '--input=linear_model:input_fn',
       '--train_steps=30', '--steps_per_eval=30', '--eval_steps=1',
       f'--model_dir={tmp_path / "model"}'],
      env={'PYTHONPATH': str(package)})
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r'^accuracy: [\d.]+$', result.stdout, re.M), result.stdout
  assert re.search(r'^global_step: 30$', result.stdout, re.M)


def test_model_by_file_path(tmp_path):
  package = _write_module(tmp_path)
  result = testutil.run_main(
      [f'--model={package / "linear_model.py"}:model_fn', '--mode=train',
       '--train_steps=5', f'--model_dir={tmp_path / "model"}'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r'^global_step: 5$', result.stdout, re.M)


def test_missing_user_function_is_a_flag_error(tmp_path):
  package = _write_module(tmp_path)
  result = testutil.run_main(['--model=linear_model:no_such_fn'],
                             env={'PYTHONPATH': str(package)})
  assert result.returncode != 0
  assert "no attribute 'no_such_fn'" in result.stderr
