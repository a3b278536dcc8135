"""Keras optimizers with the exact update math of the TF1 model_fn's.

model_fn.optimization uses tf.compat.v1 optimizers. Their Keras namesakes do
not all compute the same updates, so the native models use:

  sgd       keras SGD (momentum 0): var -= lr * g, as GradientDescent.
  momentum  V1Momentum: accum = momentum * accum + g; var -= lr * accum, as
            tf.compat.v1.train.MomentumOptimizer. Keras SGD(momentum) keeps
            v = momentum * v - lr * g; var += v instead, which equals
            -lr * accum only while lr is constant: with warmup or decay the
            two diverge from the first change of lr on.
  adam      V1Adam: TF1 Adam's update with its epsilon 1e-8 (Keras' default
            is 1e-7): m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2);
            var -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps).
            TF1 keeps b1^t, b2^t in the variables beta1_power / beta2_power,
            multiplied once per step; here they are computed from the step,
            t = iterations + 1 (what the TF1 variables hold after
            iterations steps), so the state is Keras' own: iterations, m, v.

The learning rate is model_fn.optimization.learning_rate_schedule evaluated
at the optimizer's `iterations` before the update, as TF1 evaluates it at
global_step before apply_gradients increments it. Weight decay is the same
L2 loss term, on the variables model_fn.optimization.decays names.
"""

from model_fn import optimization as tf1_optimization
from model_fn.native.legacy_keras import keras
import tensorflow as tf

ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999
ADAM_EPSILON = 1e-8


class LearningRate(keras.optimizers.schedules.LearningRateSchedule):
  """model_fn.optimization.learning_rate_schedule as a Keras schedule."""

  _KEYS = ('learning_rate', 'lr_schedule', 'warmup_steps', 'train_steps',
           'lr_decay_steps', 'lr_decay_factor')

  def __init__(self, params):
    super().__init__()
    self.params = {k: params[k] for k in self._KEYS if k in params}

  def __call__(self, step):
    return tf1_optimization.learning_rate_schedule(step, self.params)

  def get_config(self):
    return {'params': dict(self.params)}


class _SlotOptimizer(keras.optimizers.Optimizer):
  """A Keras optimizer with one list of slot variables per TF1 slot name.

  Subclasses set SLOTS = ((TF1 slot suffix, Keras slot name), ...).
  """

  SLOTS = ()

  def __init__(self, learning_rate, name, **kwargs):
    kwargs.setdefault('jit_compile', False)
    super().__init__(name=name, **kwargs)
    self._learning_rate = self._build_learning_rate(learning_rate)

  def build(self, var_list):
    super().build(var_list)
    if getattr(self, '_built', False):
      return
    self._built = True
    self._slots = {}
    for _, slot in self.SLOTS:
      self._slots[slot] = [self.add_variable_from_reference(v, slot)
                           for v in var_list]

  def slot(self, variable, slot):
    """The `slot` variable of model variable `variable` (after build)."""
    return self._slots[slot][self._index_dict[self._var_key(variable)]]

  def tf1_slots(self, variable):
    """{TF1 slot suffix (Momentum, Adam, Adam_1): slot variable}."""
    return {suffix: self.slot(variable, slot) for suffix, slot in self.SLOTS}


class V1Momentum(_SlotOptimizer):
  """tf.compat.v1.train.MomentumOptimizer's update (use_nesterov=False)."""

  SLOTS = (('Momentum', 'accumulator'),)

  def __init__(self, learning_rate, momentum=0.9, name='V1Momentum',
               **kwargs):
    super().__init__(learning_rate, name, **kwargs)
    if not 0.0 <= momentum <= 1.0:
      raise ValueError(f'`momentum` ({momentum}) must be in [0, 1].')
    self.momentum = momentum

  def update_step(self, gradient, variable):
    lr = tf.cast(self.learning_rate, variable.dtype)
    accumulator = self.slot(variable, 'accumulator')
    accumulator.assign(accumulator * self.momentum + gradient)
    variable.assign_sub(accumulator * lr)

  def get_config(self):
    config = super().get_config()
    config.update(momentum=self.momentum,
                  learning_rate=self._serialize_hyperparameter(
                      self._learning_rate))
    return config


class V1Adam(_SlotOptimizer):
  """tf.compat.v1.train.AdamOptimizer's update, beta powers from the step."""

  SLOTS = (('Adam', 'm'), ('Adam_1', 'v'))

  def __init__(self, learning_rate, beta_1=ADAM_BETA1, beta_2=ADAM_BETA2,
               epsilon=ADAM_EPSILON, name='V1Adam', **kwargs):
    super().__init__(learning_rate, name, **kwargs)
    self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

  def beta_powers(self, dtype=tf.float32):
    """(beta_1^t, beta_2^t) of the next update, t = iterations + 1."""
    t = tf.cast(self.iterations + 1, dtype)
    return (tf.pow(tf.cast(self.beta_1, dtype), t),
            tf.pow(tf.cast(self.beta_2, dtype), t))

  def update_step(self, gradient, variable):
    dtype = variable.dtype
    lr = tf.cast(self.learning_rate, dtype)
    beta_1_power, beta_2_power = self.beta_powers(dtype)
    alpha = lr * tf.sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power)
    m, v = self.slot(variable, 'm'), self.slot(variable, 'v')
    m.assign_add((gradient - m) * (1.0 - self.beta_1))
    v.assign_add((tf.square(gradient) - v) * (1.0 - self.beta_2))
    variable.assign_sub((m * alpha) / (tf.sqrt(v) + self.epsilon))

  def get_config(self):
    config = super().get_config()
    config.update(beta_1=self.beta_1, beta_2=self.beta_2,
                  epsilon=self.epsilon,
                  learning_rate=self._serialize_hyperparameter(
                      self._learning_rate))
    return config


def make_optimizer(params):
  """The optimizer params['optimizer'] (sgd|momentum|adam) names, with the
  LearningRate schedule of params. Create it inside the strategy's scope."""
  name = params['optimizer']
  learning_rate = LearningRate(params)
  if name == 'sgd':
    return keras.optimizers.SGD(learning_rate, jit_compile=False)
  if name == 'momentum':
    return V1Momentum(learning_rate, momentum=params['momentum'])
  if name == 'adam':
    return V1Adam(learning_rate)
  raise ValueError(f"params['optimizer'] must be sgd, momentum or adam, got "
                   f'{name!r}.')


def tf1_slots(optimizer, variable):
  """{TF1 slot suffix: slot variable} of `variable` ({} for plain SGD and
  for variables that are not trained, such as batch-norm statistics)."""
  if isinstance(optimizer, _SlotOptimizer) and variable.trainable:
    return optimizer.tf1_slots(variable)
  return {}


def weight_decay_loss(model, params):
  """params['weight_decay'] * sum of L2 of the decayed weights, float32.

  The decayed weights are those model_fn.optimization.decays names among
  model.tf1_variables(): not batch norm, not biases (as the TF1 model_fn).
  """
  coefficient = params['weight_decay']
  weights = [v for name, v in model.tf1_variables().items()
             if tf1_optimization.decays(name)]
  if not coefficient or not weights:
    return tf.constant(0.0, tf.float32)
  return coefficient * tf.add_n(
      [tf.nn.l2_loss(tf.cast(w, tf.float32)) for w in weights])
