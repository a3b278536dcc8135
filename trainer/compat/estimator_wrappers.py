"""Wraps Estimator.train and Estimator.evaluate of the Estimator TensorFlow
names (the real one on TF <= 2.15, the facade's after it is installed), for
the launcher's guard (trainer/guard/estimator_guard.py).

The methods are replaced on the base class that defines them, so every
subclass that calls them (TPUEstimator's own train/evaluate call them
through super(); canned Estimators inherit them) goes through the wrapper;
Estimator's check that subclasses do not override its members compares a
subclass's own attributes, which stay as they are. The wrappers keep the
methods' signatures and add hooks of their own to the call's.
"""

import functools

import tensorflow as tf

_WRAPPED = '_trainer_guarded'


def _base_defining(cls, name):
  """The class in cls's MRO furthest from cls that defines `name`."""
  return [c for c in cls.__mro__ if name in c.__dict__][-1]


def _with(hooks, extra):
  return list(hooks or []) + list(extra)


def install(around_train, around_evaluate):
  """Wraps train/evaluate of tf.estimator.Estimator's base class (and of
  tf.compat.v1.estimator.Estimator's, where they differ):
    around_train(estimator, run) is called for each train() with
      run(extra_hooks), which runs the original with the call's hooks plus
      extra_hooks and returns its result;
    around_evaluate(estimator, run, checkpoint_path) likewise for
      evaluate().
  Idempotent; False when this TensorFlow has no Estimator."""
  classes = []
  for module in (getattr(tf, 'estimator', None),
                 getattr(tf.compat.v1, 'estimator', None)):
    estimator_class = getattr(module, 'Estimator', None)
    if estimator_class is not None:
      classes.append(_base_defining(estimator_class, 'train'))
  for base in dict.fromkeys(classes):
    if getattr(base.train, _WRAPPED, False):
      continue
    base.train = _wrap_train(base.train, around_train)
    base.evaluate = _wrap_evaluate(base.evaluate, around_evaluate)
  return bool(classes)


def _wrap_train(original, around):

  @functools.wraps(original)
  def train(self, input_fn, hooks=None, steps=None, max_steps=None,
            saving_listeners=None):
    def run(extra_hooks):
      return original(self, input_fn, hooks=_with(hooks, extra_hooks),
                      steps=steps, max_steps=max_steps,
                      saving_listeners=saving_listeners)
    return around(self, run)

  setattr(train, _WRAPPED, True)
  return train


def _wrap_evaluate(original, around):

  @functools.wraps(original)
  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    def run(extra_hooks):
      return original(self, input_fn, steps=steps,
                      hooks=_with(hooks, extra_hooks),
                      checkpoint_path=checkpoint_path, name=name)
    return around(self, run, checkpoint_path)

  setattr(evaluate, _WRAPPED, True)
  return evaluate
