"""Settings of tf.compat.v1 training objects that TF1 kept in private
attributes, read where trainer.migrate learns what a train_op does.

TF1's optimizers and ExponentialMovingAverage have no accessors for the
values they were made with (learning rate, momentum, betas, epsilon; the
EMA's decay, num_updates, zero_debias); these frozen TF1 classes keep them
in the same attributes in TF 2.15-2.21 (tests/migrate/trace_test.py).
"""


def attribute(obj, name):
  """obj.<name> of a tf.compat.v1 optimizer (its private hyperparameter
  attributes, e.g. '_momentum', '_lr')."""
  return getattr(obj, name)


def ema_settings(ema):
  """(decay, num_updates, zero_debias) an ExponentialMovingAverage was
  made with."""
  return ema._decay, ema._num_updates, ema._zero_debias  # pylint: disable=protected-access
