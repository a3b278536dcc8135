"""Estimator.evaluate in a TF1 graph, as tf.estimator does it.

One graph per call: global_step, the input_fn's features and labels, the
model_fn's EVAL spec, then a `loss` metric (tf.compat.v1.metrics.mean of
the loss; a model_fn metric named `loss` or `global_step` is an error).
TF core's evaluation loop then restores the checkpoint (the given one, else
model_dir's latest; without one, variables are initialised and the warm
start applied), runs every metric's update op on each batch (`steps`
batches, or until the input ends) and every value op once, after the last
update. The result, with `global_step`, is written to model_dir/eval[_NAME]
as a summary at that step, followed by a `checkpoint_path` summary.
"""

import numpy as np
import tensorflow as tf

from trainer.api import specs
from trainer.compat import tf_private
from trainer.graph import inputs
from trainer.graph import program as program_lib

_v1 = tf.compat.v1
ModeKeys = specs.ModeKeys


def eval_dir(model_dir, name=None):
  return tf.io.gfile.join(model_dir, 'eval_' + name if name else 'eval')


def steps_hooks(steps):
  """The hooks that stop evaluation after `steps` batches (None: none)."""
  if steps is None:
    return []
  if steps <= 0:
    raise ValueError(f'Must specify steps > 0, given: {steps}')
  return [tf_private.evaluation_module()._StopAfterNEvalsHook(  # pylint: disable=protected-access
      num_evals=steps)]


def _metric_ops(spec):
  """(update op, {name: value tensor}) of the spec's metrics plus loss."""
  metrics = dict(spec.eval_metric_ops or {})
  if specs.LOSS_METRIC_KEY in metrics:
    raise ValueError(
        f'Metric with name "{specs.LOSS_METRIC_KEY}" is not allowed, because '
        'Estimator already defines a default metric with the same name.')
  metrics[specs.LOSS_METRIC_KEY] = _v1.metrics.mean(spec.loss)
  updates, values = [], {}
  for name, (value, update) in sorted(metrics.items()):
    values[name] = value
    updates.append(update)
  return (tf.group(*updates) if updates else None), values


def evaluate(program, input_fn, steps=None, hooks=(), checkpoint_path=None,
             name=None):
  """Estimator.evaluate's result dict (see module docstring)."""
  with tf_private.graph_mode():
    return _evaluate(program, input_fn, steps, hooks, checkpoint_path, name)


def _evaluate(program, input_fn, steps, hooks, checkpoint_path, name):
  hooks = list(hooks) + steps_hooks(steps)
  if not checkpoint_path:
    checkpoint_path = tf.train.latest_checkpoint(program.model_dir)
    if not checkpoint_path:
      _v1.logging.info(
          f'Could not find trained model in model_dir: {program.model_dir}, '
          'running initialization to evaluate.')
  graph = program_lib.new_graph(program)
  with graph.as_default():
    global_step = program_lib.create_global_step(program, graph)
    features, labels, input_hooks = inputs.features_and_labels(
        program.call_input_fn(input_fn, ModeKeys.EVAL))
    spec = program.call_model_fn(features, labels, ModeKeys.EVAL)
    update_op, eval_dict = _metric_ops(spec)
    global_step = _v1.train.get_global_step(graph)
    if not checkpoint_path and program.warm_start:
      _v1.logging.info('Warm-starting with WarmStartSettings: %s',
                       program.warm_start)
      _v1.train.warm_start(*program.warm_start)
    if _v1.GraphKeys.GLOBAL_STEP in eval_dict:
      raise ValueError(
          'Metric with name `global_step` is not allowed, because Estimator '
          'already defines a default metric with the same name.')
    eval_dict[_v1.GraphKeys.GLOBAL_STEP] = global_step
    all_hooks = list(input_hooks) + hooks + list(spec.evaluation_hooks or ())
    scaffold = spec.scaffold
    if scaffold and scaffold.local_init_op:
      tf_private.evaluation_module()._get_or_create_eval_step()  # pylint: disable=protected-access
      scaffold = _v1.train.Scaffold(
          local_init_op=tf.group(scaffold.local_init_op,
                                 _v1.train.Scaffold.default_local_init_op()),
          copy_from_scaffold=scaffold)
    results = tf_private.evaluation_module()._evaluate_once(  # pylint: disable=protected-access
        checkpoint_path=checkpoint_path,
        master=program.config.evaluation_master, scaffold=scaffold,
        eval_ops=update_op, final_ops=eval_dict, hooks=all_hooks,
        config=program.session_config)
  step = results[_v1.GraphKeys.GLOBAL_STEP]
  output_dir = eval_dir(program.model_dir, name)
  write_dict_to_summary(output_dir, results, step)
  if checkpoint_path:
    write_checkpoint_path_to_summary(output_dir, checkpoint_path, step)
  return results


def _dict_to_str(dictionary):
  return ', '.join(f'{k} = {v}' for k, v in sorted(dictionary.items())
                   if not isinstance(v, bytes))


def write_dict_to_summary(output_dir, dictionary, step):
  """Writes evaluation results as one Summary at `step` (floats and ints as
  scalars, serialized Summary protos as their values, arrays as tensors)."""
  _v1.logging.info('Saving dict for global step %d: %s', step,
                   _dict_to_str(dictionary))
  writer = _v1.summary.FileWriterCache.get(output_dir)
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
  writer = _v1.summary.FileWriterCache.get(output_dir)
  writer.add_summary(summary, step)
  writer.flush()
