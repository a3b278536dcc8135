"""TF 1's TPU embedding configuration, for TPUEstimator's embedding specs.

tensorflow_estimator's EmbeddingConfigSpec takes the table optimizers and
the feature/table configs of TensorFlow's own v1 TPU embedding module
(tensorflow.python.tpu.tpu_embedding: `tf.compat.v1.tpu.experimental.
AdagradParameters`, ...), which TensorFlow removed in 2.16 along with
Estimator. These are the same classes (arguments, defaults, checks and
messages of TF 2.15), installed where TensorFlow lacks them; `to_tf2`
gives their TF2 TPU embedding API counterparts
(tf.tpu.experimental.embedding), which TPUStrategy trains with.
"""

import collections
import math
from typing import Optional

import tensorflow as tf


class TableConfig(collections.namedtuple('TableConfig', [
    'vocabulary_size', 'dimension', 'initializer', 'combiner',
    'hot_id_replication', 'learning_rate', 'learning_rate_fn',
    'optimization_parameters'])):
  """An embedding table's configuration (TF 1's)."""

  def __new__(cls, vocabulary_size, dimension, initializer=None,
              combiner='mean', hot_id_replication=False, learning_rate=None,
              learning_rate_fn=None, optimization_parameters=None):
    if not isinstance(vocabulary_size, int) or vocabulary_size < 1:
      raise ValueError(f'vocabulary_size must >= 1. '
                       f'Received: {vocabulary_size}.')
    if not isinstance(dimension, int) or dimension < 1:
      raise ValueError(
          f'dimension must be a positive int. Received: {dimension}.')
    if initializer is not None and not callable(initializer):
      raise ValueError(f'initializer must be callable if specified. '
                       f'Received: {initializer}.')
    if initializer is None:
      initializer = tf.compat.v1.truncated_normal_initializer(
          mean=0.0, stddev=1 / math.sqrt(dimension))
    if combiner not in ('mean', 'sum', 'sqrtn', None):
      raise ValueError(f'combiner must be "mean", "sum", "sqrtn" or None. '
                       f'Received: {combiner}.')
    if learning_rate is not None and learning_rate_fn is not None:
      raise ValueError('At most one of learning_rate and learning_rate_fn '
                       f'can be None. Received: {learning_rate} and '
                       f'{learning_rate_fn}')
    if optimization_parameters is not None and not isinstance(
        optimization_parameters, _OptimizationParameters):
      raise ValueError('`optimization_parameters` must inherit from '
                       '`_OptimizationParameters`. '
                       '`type(optimization_parameters)`='
                       f'{type(optimization_parameters)}.')
    return super().__new__(cls, vocabulary_size, dimension, initializer,
                           combiner, hot_id_replication, learning_rate,
                           learning_rate_fn, optimization_parameters)


class FeatureConfig(collections.namedtuple(
    'FeatureConfig', ['table_id', 'max_sequence_length', 'weight_key'])):
  """A feature's configuration: its table (TF 1's)."""

  def __new__(cls, table_id, max_sequence_length=0, weight_key=None):
    if not isinstance(max_sequence_length, int) or max_sequence_length < 0:
      raise ValueError(f'max_sequence_length must be zero or a positive int, '
                       f'got {max_sequence_length}.')
    return super().__new__(cls, table_id, max_sequence_length, weight_key)


class _OptimizationParameters:
  """Parameters common to all table optimizers."""

  def __init__(self, learning_rate: float, use_gradient_accumulation: bool,
               clip_weight_min: Optional[float],
               clip_weight_max: Optional[float],
               weight_decay_factor: Optional[float],
               multiply_weight_decay_factor_by_learning_rate: Optional[bool],
               clip_gradient_min: Optional[float] = None,
               clip_gradient_max: Optional[float] = None):
    self.learning_rate = learning_rate
    self.use_gradient_accumulation = use_gradient_accumulation
    self.clip_weight_min = clip_weight_min
    self.clip_weight_max = clip_weight_max
    self.weight_decay_factor = weight_decay_factor
    self.multiply_weight_decay_factor_by_learning_rate = (
        multiply_weight_decay_factor_by_learning_rate)
    self.clip_gradient_min = clip_gradient_min
    self.clip_gradient_max = clip_gradient_max
    if not use_gradient_accumulation and (clip_gradient_min is not None or
                                          clip_gradient_max is not None):
      raise ValueError('When using gradient clipping limits, gradient  '
                       'accumulation must be enabled.')


def _non_negative(name, value):
  if value < 0.:
    raise ValueError(f'{name} must be greater than or equal to 0. got '
                     f'{value}.')


def _beta_and_epsilon(beta1, beta2, epsilon):
  if beta1 < 0. or beta1 >= 1.:
    raise ValueError(f'beta1 must be between 0. and 1; got {beta1}.')
  if beta2 < 0. or beta2 >= 1.:
    raise ValueError(f'beta2 must be between 0. and 1; got {beta2}.')
  if epsilon <= 0.:
    raise ValueError(f'epsilon must be positive; got {epsilon}.')


class AdagradParameters(_OptimizationParameters):
  """tf.compat.v1.tpu.experimental.AdagradParameters."""

  def __init__(self, learning_rate, initial_accumulator=0.1,
               use_gradient_accumulation=True, clip_weight_min=None,
               clip_weight_max=None, weight_decay_factor=None,
               multiply_weight_decay_factor_by_learning_rate=None,
               clip_gradient_min=None, clip_gradient_max=None):
    super().__init__(learning_rate, use_gradient_accumulation,
                     clip_weight_min, clip_weight_max, weight_decay_factor,
                     multiply_weight_decay_factor_by_learning_rate,
                     clip_gradient_min, clip_gradient_max)
    if initial_accumulator <= 0:
      raise ValueError('Adagrad initial_accumulator must be greater than '
                       f'zero. Received: {initial_accumulator}.')
    self.initial_accumulator = initial_accumulator


class ProximalAdagradParameters(_OptimizationParameters):
  """TF 1's ProximalAdagradParameters."""

  def __init__(self, learning_rate, initial_accumulator=0.1,
               l1_regularization_strength=0.0, l2_regularization_strength=0.0,
               use_gradient_accumulation=True, clip_weight_min=None,
               clip_weight_max=None, weight_decay_factor=None,
               multiply_weight_decay_factor_by_learning_rate=None,
               clip_gradient_min=None, clip_gradient_max=None):
    super().__init__(learning_rate, use_gradient_accumulation,
                     clip_weight_min, clip_weight_max, weight_decay_factor,
                     multiply_weight_decay_factor_by_learning_rate,
                     clip_gradient_min, clip_gradient_max)
    if initial_accumulator <= 0:
      raise ValueError('Adagrad initial_accumulator must be positive. '
                       f'Received: {initial_accumulator}.')
    _non_negative('l1_regularization_strength', l1_regularization_strength)
    _non_negative('l2_regularization_strength', l2_regularization_strength)
    self.initial_accumulator = initial_accumulator
    self.l1_regularization_strength = l1_regularization_strength
    self.l2_regularization_strength = l2_regularization_strength


class AdamParameters(_OptimizationParameters):
  """tf.compat.v1.tpu.experimental.AdamParameters."""

  def __init__(self, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-08,
               lazy_adam=True, sum_inside_sqrt=True,
               use_gradient_accumulation=True, clip_weight_min=None,
               clip_weight_max=None, weight_decay_factor=None,
               multiply_weight_decay_factor_by_learning_rate=None,
               clip_gradient_min=None, clip_gradient_max=None):
    super().__init__(learning_rate, use_gradient_accumulation,
                     clip_weight_min, clip_weight_max, weight_decay_factor,
                     multiply_weight_decay_factor_by_learning_rate,
                     clip_gradient_min, clip_gradient_max)
    _beta_and_epsilon(beta1, beta2, epsilon)
    if not use_gradient_accumulation and not lazy_adam:
      raise ValueError(
          'When disabling Lazy Adam, gradient accumulation must be used.')
    self.beta1 = beta1
    self.beta2 = beta2
    self.epsilon = epsilon
    self.lazy_adam = lazy_adam
    self.sum_inside_sqrt = sum_inside_sqrt


class FtrlParameters(_OptimizationParameters):
  """tf.compat.v1.tpu.experimental.FtrlParameters."""

  def __init__(self, learning_rate, learning_rate_power=-0.5,
               initial_accumulator_value=0.1, l1_regularization_strength=0.0,
               l2_regularization_strength=0.0, use_gradient_accumulation=True,
               clip_weight_min=None, clip_weight_max=None,
               weight_decay_factor=None,
               multiply_weight_decay_factor_by_learning_rate=None,
               multiply_linear_by_learning_rate=False, beta=0,
               allow_zero_accumulator=False, clip_gradient_min=None,
               clip_gradient_max=None):
    super().__init__(learning_rate, use_gradient_accumulation,
                     clip_weight_min, clip_weight_max, weight_decay_factor,
                     multiply_weight_decay_factor_by_learning_rate,
                     clip_gradient_min, clip_gradient_max)
    if learning_rate_power > 0.:
      raise ValueError('learning_rate_power must be less than or equal to 0. '
                       f'got {learning_rate_power}.')
    if initial_accumulator_value < 0.:
      raise ValueError('initial_accumulator_value must be greater than or '
                       f'equal to 0. got {initial_accumulator_value}.')
    _non_negative('l1_regularization_strength', l1_regularization_strength)
    _non_negative('l2_regularization_strength', l2_regularization_strength)
    self.learning_rate_power = learning_rate_power
    self.initial_accumulator_value = initial_accumulator_value
    self.initial_linear_value = 0.0
    self.l1_regularization_strength = l1_regularization_strength
    self.l2_regularization_strength = l2_regularization_strength
    self.multiply_linear_by_learning_rate = multiply_linear_by_learning_rate
    self.beta = beta
    self.allow_zero_accumulator = allow_zero_accumulator


class MomentumParameters(_OptimizationParameters):
  """TF 1's MomentumParameters."""

  def __init__(self, learning_rate, momentum, use_nesterov=False,
               use_gradient_accumulation=True, clip_weight_min=None,
               clip_weight_max=None, weight_decay_factor=None,
               multiply_weight_decay_factor_by_learning_rate=None,
               clip_gradient_min=None, clip_gradient_max=None):
    super().__init__(learning_rate, use_gradient_accumulation,
                     clip_weight_min, clip_weight_max, weight_decay_factor,
                     multiply_weight_decay_factor_by_learning_rate,
                     clip_gradient_min, clip_gradient_max)
    self.momentum = momentum
    self.use_nesterov = use_nesterov


class RMSPropParameters(_OptimizationParameters):
  """TF 1's RMSPropParameters."""

  def __init__(self, learning_rate, rho, momentum, epsilon,
               use_gradient_accumulation=True, clip_weight_min=None,
               clip_weight_max=None, weight_decay_factor=None,
               multiply_weight_decay_factor_by_learning_rate=None,
               clip_gradient_min=None, clip_gradient_max=None):
    super().__init__(learning_rate, use_gradient_accumulation,
                     clip_weight_min, clip_weight_max, weight_decay_factor,
                     multiply_weight_decay_factor_by_learning_rate,
                     clip_gradient_min, clip_gradient_max)
    self.rho = rho
    self.momentum = momentum
    self.epsilon = epsilon


class StochasticGradientDescentParameters(_OptimizationParameters):
  """tf.compat.v1.tpu.experimental.StochasticGradientDescentParameters."""

  def __init__(self, learning_rate, use_gradient_accumulation=True,
               clip_weight_min=None, clip_weight_max=None,
               weight_decay_factor=None,
               multiply_weight_decay_factor_by_learning_rate=None,
               clip_gradient_min=None, clip_gradient_max=None):
    super().__init__(learning_rate, use_gradient_accumulation,
                     clip_weight_min, clip_weight_max, weight_decay_factor,
                     multiply_weight_decay_factor_by_learning_rate,
                     clip_gradient_min, clip_gradient_max)


# The table optimizers EmbeddingConfigSpec accepts (tensorflow_estimator's).
SUPPORTED_OPTIMIZERS = (
    ProximalAdagradParameters, AdagradParameters, AdamParameters,
    FtrlParameters, StochasticGradientDescentParameters, MomentumParameters,
    RMSPropParameters)
# tf.compat.v1.tpu.experimental's names of them (TF 2.15).
PUBLIC_V1 = {c.__name__: c for c in (
    AdagradParameters, AdamParameters, FtrlParameters,
    StochasticGradientDescentParameters)}


def _clipping(parameters):
  """TF2's clip arguments of TF1's parameters."""
  return dict(
      use_gradient_accumulation=parameters.use_gradient_accumulation,
      clip_weight_min=parameters.clip_weight_min,
      clip_weight_max=parameters.clip_weight_max,
      weight_decay_factor=parameters.weight_decay_factor,
      multiply_weight_decay_factor_by_learning_rate=bool(
          parameters.multiply_weight_decay_factor_by_learning_rate),
      clipvalue=(None if parameters.clip_gradient_min is None and
                 parameters.clip_gradient_max is None else
                 (parameters.clip_gradient_min, parameters.clip_gradient_max)))


def to_tf2(parameters, learning_rate=None):
  """The tf.tpu.experimental.embedding optimizer training as `parameters`
  (a table's learning_rate, or learning_rate_fn, over theirs);
  NotImplementedError for one TF2's API does not have."""
  embedding = tf.tpu.experimental.embedding
  rate = parameters.learning_rate if learning_rate is None else learning_rate
  common = _clipping(parameters)
  if type(parameters) is AdagradParameters:  # pylint: disable=unidiomatic-typecheck
    return embedding.Adagrad(
        learning_rate=rate,
        initial_accumulator_value=parameters.initial_accumulator, **common)
  if type(parameters) is AdamParameters:  # pylint: disable=unidiomatic-typecheck
    return embedding.Adam(
        learning_rate=rate, beta_1=parameters.beta1, beta_2=parameters.beta2,
        epsilon=parameters.epsilon, lazy_adam=parameters.lazy_adam,
        sum_inside_sqrt=parameters.sum_inside_sqrt, **common)
  if type(parameters) is FtrlParameters:  # pylint: disable=unidiomatic-typecheck
    return embedding.FTRL(
        learning_rate=rate,
        learning_rate_power=parameters.learning_rate_power,
        l1_regularization_strength=parameters.l1_regularization_strength,
        l2_regularization_strength=parameters.l2_regularization_strength,
        beta=parameters.beta,
        initial_accumulator_value=parameters.initial_accumulator_value,
        multiply_linear_by_learning_rate=(
            parameters.multiply_linear_by_learning_rate),
        allow_zero_accumulator=parameters.allow_zero_accumulator, **common)
  if type(parameters) is StochasticGradientDescentParameters:  # pylint: disable=unidiomatic-typecheck
    return embedding.SGD(learning_rate=rate, **common)
  raise NotImplementedError(
      f'{type(parameters).__name__} has no TF2 TPU embedding optimizer '
      '(tf.tpu.experimental.embedding has SGD, Adagrad, Adam and FTRL): '
      'train the tables with one of those.')
