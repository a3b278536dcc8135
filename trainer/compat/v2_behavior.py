"""disable_v2_behavior() in a legacy main, under the facade.

A program may call tf.compat.v1.disable_v2_behavior() (or
disable_eager_execution(), disable_resource_variables(), ...) and then run
TF1 code of its own around its Estimator calls: placeholders, Sessions,
`.eval(session=...)`. The facade leaves those switches alone, so that code
runs as on TF 2.15. Estimator calls on the graph engine build their own TF1
graphs whatever the switches say, as the real Estimator does. Calls that run
on the tf2 runner (tf.distribute) need TF2 behaviour: they run inside
`tf2_behavior()`, which turns eager execution, resource variables and
control flow v2 on for the call and restores the program's settings after.
"""

import contextlib

import tensorflow as tf

from trainer.compat import facade_private


@contextlib.contextmanager
def tf2_behavior():
  """TF2 behaviour for one tf2-runner call, whatever the program disabled."""
  resource_variables = tf.compat.v1.resource_variables_enabled()
  control_flow_v2 = facade_private.control_flow_v2_enabled()
  tf.compat.v1.enable_resource_variables()
  tf.compat.v1.enable_control_flow_v2()
  try:
    with facade_private.eager_mode():
      yield
  finally:
    if not resource_variables:
      tf.compat.v1.disable_resource_variables()
    if not control_flow_v2:
      tf.compat.v1.disable_control_flow_v2()
