"""The TensorBoard summaries Estimator writes, written the same way here.

Training: Estimator adds a `loss` scalar summary after the model_fn, a
SummarySaverHook (every save_summary_steps, the merged summaries) and a
StepCounterHook (`global_step/sec` every log_step_count_steps) writing to
model_dir. `training_hooks` makes the same hooks, of TF's own classes, for
the tf2 runner's hook driver, so both runners write the same tags at the
same steps.

Evaluation: Estimator writes each metric (simple_value scalars) and the
`checkpoint_path` it evaluated to model_dir/eval (or eval_NAME) at the
checkpoint's global_step; `write_eval_summary` writes the same protos.
"""

import os

import numpy as np
import tensorflow as tf

_v1 = tf.compat.v1


def training_hooks(loss, model_dir, save_summary_steps, log_step_count_steps):
  """Estimator's default summary hooks; call in the traced step after the
  model_fn, inside its collections (merges the model_fn's summaries)."""
  hooks = []
  if save_summary_steps:
    _v1.summary.scalar('loss', loss)
    summary_op = _v1.summary.merge_all()
    if summary_op is not None:  # None where TF skips summaries (replicas).
      hooks.append(_v1.train.SummarySaverHook(
          save_steps=save_summary_steps, output_dir=model_dir,
          summary_op=summary_op))
  if log_step_count_steps:
    hooks.append(_v1.train.StepCounterHook(
        every_n_steps=log_step_count_steps, output_dir=model_dir))
  return hooks


def eval_dir(model_dir, name=None):
  """model_dir/eval, or model_dir/eval_NAME, as Estimator names it."""
  return os.path.join(model_dir, 'eval' if not name else f'eval_{name}')


def _summary(metrics):
  summary = _v1.Summary()
  for key, value in sorted(metrics.items()):
    if key == 'global_step':
      continue
    if isinstance(value, (bool, np.bool_)):
      summary.value.add(tag=key, simple_value=float(value))
    elif isinstance(value, (int, float, np.integer, np.floating)):
      summary.value.add(tag=key, simple_value=float(value))
    elif isinstance(value, np.ndarray) and value.size == 1:
      summary.value.add(tag=key, simple_value=float(value.reshape(())))
  return summary


def write_eval_summary(directory, metrics, global_step, checkpoint_path):
  """Writes the metrics and the evaluated checkpoint's path, at global_step."""
  path_summary = _v1.Summary()
  path_summary.value.add(tag='checkpoint_path', tensor=tf.make_tensor_proto(
      checkpoint_path or '', dtype=tf.string))
  writer = tf.summary.create_file_writer(directory)
  with writer.as_default():
    for proto in (_summary(metrics), path_summary):
      tf.summary.experimental.write_raw_pb(proto.SerializeToString(),
                                           step=global_step)
  writer.flush()
  writer.close()
