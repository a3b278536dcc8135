"""disable_v2_behavior() and friends in a legacy main, under the facade.

The facade runs the model_fn under tf.function and tf.distribute, which need
eager execution, resource variables and control flow v2. While the facade
is installed, tf.compat.v1.disable_v2_behavior(), disable_eager_execution(),
disable_resource_variables() and disable_control_flow_v2() (also through
tensorflow.python.compat.v2_compat) do nothing but log one warning. Code
that then needs graph mode outside a model_fn/input_fn (a placeholder or a
Session at the top level) fails with TF's eager-execution error; the
launcher adds a line saying why (explain()).
"""

import tensorflow as tf

from absl import logging

from trainer.compat import facade_private

NEUTRALISED = ('disable_v2_behavior', 'disable_eager_execution',
               'disable_resource_variables', 'disable_control_flow_v2')
_called = []
_installed = []


def _neutralised(name):

  def function(*args, **kwargs):
    del args, kwargs
    if not _called:
      logging.warning(
          'trainer.legacy: tf.compat.v1.%s() ignored: the Estimator facade '
          'on TensorFlow %s runs the model_fn under tf.function (TF2 '
          'behaviour). Graph-mode code outside model_fn/input_fn (top-level '
          'placeholders or Sessions) will fail with TF\'s eager-execution '
          'error.', name, tf.__version__)
    _called.append(name)

  function.__name__ = name
  function.__doc__ = f'Neutralised by trainer.legacy: {name}() does nothing.'
  return function


def neutralise():
  """Replaces the v1 switches by no-ops that log once; idempotent."""
  if _installed:
    return
  for name in NEUTRALISED:
    setattr(tf.compat.v1, name, _neutralised(name))
  facade_private.V2_COMPAT_MODULE.disable_v2_behavior = _neutralised(
      'disable_v2_behavior')
  _installed.append(True)


def called():
  """Names of the neutralised functions the program called, in order."""
  return list(_called)


def explain(error):
  """A sentence tying `error` to a neutralised call, or None if unrelated."""
  text = str(error)
  if not _called or 'eager' not in text.lower():
    return None
  return (f'trainer.legacy: the program called tf.compat.v1.{_called[0]}(), '
          'which the facade ignored (TF2 behaviour stays on), and then used a '
          'graph-mode-only API outside model_fn/input_fn: '
          f'{type(error).__name__}: {text.splitlines()[0] if text else ""}. '
          'Build that graph inside `with tf.Graph().as_default():` or move '
          'it into the model_fn/input_fn.')
