"""Learning-rate schedules, weight decay selection, loss and metrics."""

import numpy as np
import pytest
import tensorflow as tf

from model_fn import classifier
from model_fn import metrics
from model_fn import optimization
from tests import testutil


def _lr(step, **params):
  params = testutil.base_params(**dict(
      {'learning_rate': 0.1, 'train_steps': 100, 'lr_schedule': 'constant'},
      **params))
  return float(optimization.learning_rate_schedule(tf.constant(step), params))


def test_warmup_then_cosine():
  assert _lr(0, lr_schedule='cosine', warmup_steps=10) == 0.0
  assert _lr(5, lr_schedule='cosine', warmup_steps=10) == pytest.approx(0.05)
  assert _lr(10, lr_schedule='cosine', warmup_steps=10) == pytest.approx(0.1)
  assert _lr(55, lr_schedule='cosine', warmup_steps=10) == pytest.approx(
      0.05, abs=1e-6)
  assert _lr(100, lr_schedule='cosine', warmup_steps=10) == pytest.approx(
      0.0, abs=1e-7)


def test_linear_and_constant():
  assert _lr(25, lr_schedule='linear') == pytest.approx(0.075)
  assert _lr(99, lr_schedule='constant') == pytest.approx(0.1)


def test_piecewise():
  params = dict(lr_schedule='piecewise', lr_decay_steps=[30, 60],
                lr_decay_factor=0.1)
  assert _lr(29, **params) == pytest.approx(0.1)
  assert _lr(30, **params) == pytest.approx(0.01)
  assert _lr(75, **params) == pytest.approx(0.001)


def test_unknown_schedule_is_named():
  with pytest.raises(ValueError, match='lr_schedule'):
    _lr(1, lr_schedule='exponential')


def test_weight_decay_skips_batch_norm_and_biases():
  assert optimization.decays('resnet50/stem/conv/kernel:0')
  assert optimization.decays('mlp/dense1/kernel:0')
  assert not optimization.decays('resnet50/stem/batch_norm/gamma:0')
  assert not optimization.decays('resnet50/stem/batch_norm/beta:0')
  assert not optimization.decays('mlp/dense1/bias:0')


def test_weight_decay_loss_value():
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    tf.compat.v1.get_variable('fc/kernel', initializer=[[1.0, 2.0]])
    tf.compat.v1.get_variable('fc/bias', initializer=[5.0])
    tf.compat.v1.get_variable('batch_norm/gamma', initializer=[7.0])
    loss = optimization.weight_decay_loss(
        testutil.base_params(weight_decay=0.1))
    sess.run(tf.compat.v1.global_variables_initializer())
    assert sess.run(loss) == pytest.approx(0.1 * (1.0 + 4.0) / 2)


def test_cross_entropy_with_label_smoothing():
  logits = tf.constant([[2.0, 0.0, -1.0]])
  labels = tf.constant([0])
  log_p = tf.nn.log_softmax(logits).numpy()[0]
  plain = float(classifier.cross_entropy(labels, logits, 3))
  assert plain == pytest.approx(-log_p[0], rel=1e-6)
  smoothed = float(classifier.cross_entropy(labels, logits, 3, 0.3))
  target = np.array([0.7 + 0.1, 0.1, 0.1])
  assert smoothed == pytest.approx(-(target * log_p).sum(), rel=1e-6)


def test_optimizers_by_name():
  with tf.Graph().as_default():
    for name, cls in (('sgd', tf.compat.v1.train.GradientDescentOptimizer),
                      ('momentum', tf.compat.v1.train.MomentumOptimizer),
                      ('adam', tf.compat.v1.train.AdamOptimizer)):
      assert isinstance(optimization.make_optimizer(
          0.1, testutil.base_params(optimizer=name)), cls)
    on_tpu = optimization.make_optimizer(
        0.1, testutil.base_params(optimizer='sgd', use_tpu=True))
    assert isinstance(on_tpu, tf.compat.v1.tpu.CrossShardOptimizer)


def test_metric_fn_top1_and_top5():
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    # Every row ranks class 0 first and class 5 last.
    logits = tf.constant([[6.0, 5.0, 4.0, 3.0, 2.0, 1.0]] * 4)
    labels = tf.constant([0, 4, 5, 1])
    result = metrics.classification_metric_fn(labels, logits)
    sess.run(tf.compat.v1.local_variables_initializer())
    sess.run({k: update for k, (_, update) in result.items()})
    values = sess.run({k: value for k, (value, _) in result.items()})
  assert values['top_1_accuracy'] == pytest.approx(0.25)
  assert values['top_5_accuracy'] == pytest.approx(0.75)


def test_metric_fn_without_top5_for_few_classes():
  with tf.Graph().as_default():
    result = metrics.classification_metric_fn(tf.constant([0]),
                                              tf.constant([[1.0, 0.0]]))
  assert set(result) == {'top_1_accuracy'}
