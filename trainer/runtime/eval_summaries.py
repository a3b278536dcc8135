"""The summaries Estimator.evaluate writes, as it writes them.

After an evaluation Estimator writes, to model_dir/eval (eval_NAME for a
named one), the result dict as one Summary at the checkpoint's global step
(floats and ints as scalars, serialized Summary protos as their values,
arrays as tensors; anything else skipped with a warning), then the
evaluated checkpoint's path as a string summary. Every runner's evaluation
writes through here, so TensorBoard and tools reading the events
(BestExporter, early stopping) see the same events whichever ran.
"""

import os

import numpy as np
import tensorflow as tf

_v1 = tf.compat.v1


def eval_dir(model_dir, name=None):
  """model_dir/eval, or model_dir/eval_NAME, as Estimator names it."""
  return os.path.join(model_dir, 'eval_' + name if name else 'eval')


def _writer(output_dir):
  """Estimator's cached FileWriter of output_dir (made in a graph: a v1
  FileWriter cannot be made eagerly)."""
  with tf.Graph().as_default():
    return _v1.summary.FileWriterCache.get(output_dir)


def dict_to_str(dictionary):
  """'k1 = v1, k2 = v2' in key order (bytes values left out)."""
  # '%s' as Estimator: str(np.float32) has float32's digits; format() has
  # a Python float's.
  return ', '.join('%s = %s' % (k, v) for k, v in sorted(dictionary.items())
                   if not isinstance(v, bytes))


def write_dict_to_summary(output_dir, dictionary, step):
  """Writes evaluation results as one Summary at `step` (floats and ints as
  scalars, serialized Summary protos as their values, arrays as tensors)."""
  _v1.logging.info('Saving dict for global step %d: %s', step,
                   dict_to_str(dictionary))
  writer = _writer(output_dir)
  summary = _v1.Summary()
  for key, value in dictionary.items():
    if value is None or key == 'global_step':
      continue
    if isinstance(value, (np.float32, float)):
      summary.value.add(tag=key, simple_value=float(value))
    elif isinstance(value, (np.int64, np.int32, int)):
      summary.value.add(tag=key, simple_value=int(value))
    elif isinstance(value, bytes):
      try:
        parsed = _v1.Summary.FromString(value)
      except Exception:  # pylint: disable=broad-except  (protobuf DecodeError)
        _v1.logging.warn(
            'Skipping summary for %s, cannot parse string to Summary.', key)
        continue
      for i, entry in enumerate(parsed.value):
        entry.tag = f'{key}/{i}'
      summary.value.extend(parsed.value)
    elif isinstance(value, np.ndarray):
      entry = summary.value.add()
      entry.tag = key
      entry.node_name = key
      entry.tensor.CopyFrom(tf.make_tensor_proto(value))
    else:
      _v1.logging.warn(
          'Skipping summary for %s, must be a float, np.float32, np.int64, '
          'np.int32 or int or np.ndarray or a serialized string of Summary.',
          key)
  writer.add_summary(summary, step)
  writer.flush()


def write_checkpoint_path_to_summary(output_dir, checkpoint_path, step):
  """Writes the evaluated checkpoint's path as a string summary at `step`."""
  _v1.logging.info("Saving 'checkpoint_path' summary for global step %d: %s",
                   step, checkpoint_path)
  summary = _v1.Summary()
  summary.value.add(tag='checkpoint_path', tensor=tf.make_tensor_proto(
      checkpoint_path, dtype=tf.string))
  writer = _writer(output_dir)
  writer.add_summary(summary, step)
  writer.flush()


def write_eval_summary(output_dir, results, step, checkpoint_path):
  """Both of Estimator's evaluation summaries (the path only if any)."""
  write_dict_to_summary(output_dir, results, step)
  if checkpoint_path:
    write_checkpoint_path_to_summary(output_dir, checkpoint_path, step)
