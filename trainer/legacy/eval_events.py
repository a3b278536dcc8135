"""Writes an evaluation's metrics as Estimator does: model_dir/eval[_name].

One event per evaluate() call at step = global_step: each numeric metric as
a Summary value with simple_value (so TensorBoard shows the same scalar
tags), and the checkpoint path as a string tensor under 'checkpoint_path'.
"""

from absl import logging
import numpy as np
import tensorflow as tf


def eval_dir(model_dir, name=None):
  """Estimator.eval_dir: model_dir/eval, or model_dir/eval_NAME."""
  return tf.io.gfile.join(model_dir, 'eval_' + name if name else 'eval')


def _summary(metrics, checkpoint_path):
  summary = tf.compat.v1.Summary()
  for key, value in sorted(metrics.items()):
    if key == 'global_step' or value is None:
      continue
    if isinstance(value, (float, int, np.floating, np.integer)):
      summary.value.add(tag=key, simple_value=float(value))
    else:
      logging.warning('Skipping summary for %s, must be a float or an int.',
                      key)
  if checkpoint_path:
    summary.value.add(tag='checkpoint_path', tensor=tf.make_tensor_proto(
        checkpoint_path, dtype=tf.string))
  return summary


_writers = {}  # One events file per directory and process, as Estimator.


def write(output_dir, metrics, global_step, checkpoint_path):
  """Logs and writes `metrics` at `global_step` into output_dir's events."""
  logging.info('Saving dict for global step %d: %s', global_step, ', '.join(
      f'{k} = {v!s}' for k, v in sorted(metrics.items())))
  if output_dir not in _writers:
    _writers[output_dir] = tf.summary.create_file_writer(output_dir)
  writer = _writers[output_dir]
  with writer.as_default():
    tf.summary.experimental.write_raw_pb(
        _summary(metrics, checkpoint_path).SerializeToString(),
        step=int(global_step))
  writer.flush()
