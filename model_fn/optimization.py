"""Learning-rate schedules, optimizers and weight decay for model_fns."""

import math

import tensorflow as tf

from model_fn import layers

_v1 = tf.compat.v1


def learning_rate_schedule(global_step, params):
  """Learning rate at `global_step`: linear warmup, then the chosen decay.

  params: learning_rate, lr_schedule (constant|cosine|linear|piecewise),
  warmup_steps, train_steps, lr_decay_steps, lr_decay_factor.
  """
  base = params['learning_rate']
  schedule = params['lr_schedule']
  warmup = int(params['warmup_steps'])
  total = int(params['train_steps'])
  step = tf.cast(global_step, tf.float32)
  if schedule == 'constant':
    decayed = tf.constant(base, tf.float32)
  elif schedule in ('cosine', 'linear'):
    progress = tf.clip_by_value(
        (step - warmup) / float(max(total - warmup, 1)), 0.0, 1.0)
    if schedule == 'cosine':
      decayed = 0.5 * base * (1.0 + tf.cos(math.pi * progress))
    else:
      decayed = base * (1.0 - progress)
  elif schedule == 'piecewise':
    boundaries = [int(b) for b in params['lr_decay_steps']]
    factor = params['lr_decay_factor']
    passed = tf.add_n([tf.cast(step >= b, tf.float32) for b in boundaries]
                      ) if boundaries else tf.constant(0.0)
    decayed = base * tf.pow(tf.constant(factor, tf.float32), passed)
  else:
    raise ValueError(f"params['lr_schedule'] must be constant, cosine, linear "
                     f'or piecewise, got {schedule!r}.')
  if warmup > 0:
    warm = base * step / float(warmup)
    return tf.where(step < warmup, warm, decayed)
  return decayed


def make_optimizer(learning_rate, params):
  """A tf.compat.v1 optimizer; wrapped in CrossShardOptimizer iff on TPU."""
  name = params['optimizer']
  if name == 'sgd':
    optimizer = _v1.train.GradientDescentOptimizer(learning_rate)
  elif name == 'momentum':
    optimizer = _v1.train.MomentumOptimizer(
        learning_rate, momentum=params['momentum'])
  elif name == 'adam':
    optimizer = _v1.train.AdamOptimizer(learning_rate)
  else:
    raise ValueError(f"params['optimizer'] must be sgd, momentum or adam, "
                     f'got {name!r}.')
  if params['use_tpu']:
    optimizer = _v1.tpu.CrossShardOptimizer(optimizer)
  return optimizer


def decays(name):
  """True for weights that get weight decay: not batch norm, not biases.

  name: a variable's name (with or without ':0').
  """
  parts = layers.variable_name(name).split('/')
  return layers.BATCH_NORM_SCOPE not in parts and parts[-1] != 'bias'


def weight_decay_loss(params):
  """params['weight_decay'] * sum of L2 of decayed trainable variables."""
  coefficient = params['weight_decay']
  if not coefficient:
    return tf.constant(0.0, tf.float32)
  weights = [tf.cast(v, tf.float32) for v in _v1.trainable_variables()
             if decays(v.name)]
  if not weights:
    return tf.constant(0.0, tf.float32)
  return coefficient * tf.add_n([tf.nn.l2_loss(w) for w in weights])
