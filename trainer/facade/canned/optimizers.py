"""The optimizer a canned Estimator trains with, from its `optimizer` argument.

As tensorflow_estimator 2.15 resolves it: a name ('Adagrad', 'Adam', 'Ftrl',
'RMSProp', 'SGD'), an optimizer instance, or a callable returning one (called
inside the model_fn, so it may build learning-rate decay on global_step).
The v1 Estimators take tf.compat.v1.train optimizers; the v2 ones Keras 2
legacy optimizers (tf.keras.optimizers.legacy), which train TF1 graphs.
"""

import functools
import inspect

from absl import logging
import tensorflow as tf

from trainer.compat import canned as canned_private

# A v2 optimizer named without a learning rate and whose class has no
# default for one gets this (tensorflow_estimator's historical default).
_LEARNING_RATE = 0.05

_OPTIMIZER_CLS_NAMES = {
    'Adagrad': tf.compat.v1.train.AdagradOptimizer,
    'Adam': tf.compat.v1.train.AdamOptimizer,
    'Ftrl': tf.compat.v1.train.FtrlOptimizer,
    'RMSProp': tf.compat.v1.train.RMSPropOptimizer,
    'SGD': tf.compat.v1.train.GradientDescentOptimizer,
}


@functools.lru_cache(maxsize=None)
def _v2_classes():
  legacy = tf.keras.optimizers.legacy
  return {'Adagrad': legacy.Adagrad, 'Adam': legacy.Adam, 'Ftrl': legacy.Ftrl,
          'RMSProp': legacy.RMSprop, 'SGD': legacy.SGD}


def __getattr__(name):  # pylint: disable=invalid-name
  # The reference's _OPTIMIZER_CLS_NAMES_V2, made on first use (it loads
  # Keras).
  if name == '_OPTIMIZER_CLS_NAMES_V2':
    return _v2_classes()
  raise AttributeError(f"module '{__name__}' has no attribute '{name}'")


def _unsupported_name(name, classes):
  return ValueError(f'Unsupported optimizer name: {name}. Supported names '
                    f'are: {tuple(sorted(classes))}')


def get_optimizer_instance(opt, learning_rate=None):
  """A tf.compat.v1.train.Optimizer for `opt`: a name (then learning_rate
  is required), an instance, or a callable returning one."""
  if isinstance(opt, str):
    if opt not in _OPTIMIZER_CLS_NAMES:
      raise _unsupported_name(opt, _OPTIMIZER_CLS_NAMES)
    if not learning_rate:
      raise ValueError('learning_rate must be specified when opt is string.')
    return _OPTIMIZER_CLS_NAMES[opt](learning_rate=learning_rate)
  if callable(opt):
    opt = opt()
  if not isinstance(opt, tf.compat.v1.train.Optimizer):
    raise ValueError(
        f'The given object is not an Optimizer instance. Given: {opt}')
  return opt


def _optimizer_has_default_learning_rate(opt):
  """Whether optimizer class `opt`'s constructor defaults learning_rate."""
  spec = inspect.getfullargspec(opt.__init__)
  defaults = dict(zip(reversed(spec.args), reversed(spec.defaults or ())))
  defaults.update(spec.kwonlydefaults or {})
  return 'learning_rate' in defaults


def get_optimizer_instance_v2(opt, learning_rate=None):
  """A Keras legacy optimizer for `opt`: a name (learning_rate, else the
  class's default), an instance, or a callable returning one. A Keras
  optimizer of the new kind is converted when eager, refused in a graph
  (where canned Estimators build their models)."""
  if isinstance(opt, str):
    classes = _v2_classes()
    if opt not in classes:
      raise _unsupported_name(opt, classes)
    cls = classes[opt]
    if learning_rate:
      return cls(learning_rate=learning_rate)
    if _optimizer_has_default_learning_rate(cls):
      return cls()
    return cls(learning_rate=_LEARNING_RATE)
  if callable(opt):
    opt = opt()
  legacy_base = tf.keras.optimizers.legacy.Optimizer
  new_base = tf.keras.optimizers.Optimizer
  if isinstance(opt, new_base) and not isinstance(opt, legacy_base):
    if not tf.executing_eagerly():
      raise ValueError(
          'Please set your optimizer as an instance of '
          '`tf.keras.optimizers.legacy.Optimizer`, e.g., '
          f'`tf.keras.optimizers.legacy.{type(opt).__name__}`.'
          f'Received optimizer type: {type(opt)}.')
    logging.warning(
        'You are using `tf.keras.optimizers.experimental.Optimizer` in TF '
        'estimator, which only supports `tf.keras.optimizers.legacy.'
        'Optimizer`. Automatically converting your optimizer to '
        '`tf.keras.optimizers.legacy.Optimizer`.')
    opt = canned_private.to_legacy_keras_optimizer(opt)
  if not isinstance(opt, (legacy_base, new_base)):
    raise ValueError('The given object is not a tf.keras.optimizers.Optimizer'
                     f' instance. Given: {opt}')
  return opt
