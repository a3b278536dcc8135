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

import dataclasses
from typing import Any

import tensorflow as tf

from trainer.api import specs
from trainer.compat import tf_private
from trainer.engines.graph import inputs
from trainer.engines.graph import program as program_lib
from trainer.guard import checkpoint_fit
from trainer.runtime import eval_summaries

_v1 = tf.compat.v1


def steps_hooks(steps):
  """The hooks that stop evaluation after `steps` batches (None: none)."""
  if steps is None:
    return []
  if steps <= 0:
    raise ValueError(f'Must specify steps > 0, given: {steps}')
  return [tf_private.stop_after_n_evals_hook(steps)]


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
    built = build(program, input_fn, hooks, checkpoint_path)
    return run(program, built, checkpoint_path,
               eval_summaries.eval_dir(program.model_dir, name))


@dataclasses.dataclass
class Evaluation:
  """One evaluation's graph: what run() executes."""
  scaffold: Any
  update_op: Any
  eval_dict: dict
  hooks: list


def build(program, input_fn, hooks, checkpoint_path=None):
  """Builds evaluation in the default graph: input, the model_fn's EVAL
  spec, the metrics and `loss`, global_step; warm-starts when there is no
  checkpoint. The Evaluation run() executes."""
  graph = _v1.get_default_graph()
  program_lib.create_global_step(program, graph)
  features, labels, input_hooks = inputs.features_and_labels(
      program.call_input_fn(input_fn, specs.ModeKeys.EVAL))
  spec = program.call_model_fn(features, labels, specs.ModeKeys.EVAL)
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
  all_hooks = list(input_hooks) + list(hooks) + list(
      spec.evaluation_hooks or ())
  scaffold = spec.scaffold
  if scaffold and scaffold.local_init_op:
    tf_private.get_or_create_eval_step()
    scaffold = _v1.train.Scaffold(
        local_init_op=tf.group(scaffold.local_init_op,
                               _v1.train.Scaffold.default_local_init_op()),
        copy_from_scaffold=scaffold)
  return Evaluation(scaffold, update_op, eval_dict, all_hooks)


def run(program, evaluation, checkpoint_path, output_dir, scaffold=None):
  """Runs a built Evaluation in its graph (on `checkpoint_path`'s
  variables, or as `scaffold` initialises them) and writes Estimator's
  summaries to output_dir; the result dict. A checkpoint that does not
  fit the model is refused first (CheckpointMismatchError)."""
  scaffold = scaffold or evaluation.scaffold
  checkpoint_fit.check_saver(scaffold.saver if scaffold else None,
                             checkpoint_path)
  results = tf_private.evaluate_once(
      checkpoint_path=checkpoint_path,
      master=program.config.evaluation_master,
      scaffold=scaffold,
      eval_ops=evaluation.update_op, final_ops=evaluation.eval_dict,
      hooks=evaluation.hooks, config=program.session_config)
  step = results[_v1.GraphKeys.GLOBAL_STEP]
  eval_summaries.write_eval_summary(output_dir, results, step,
                                    checkpoint_path)
  return results
