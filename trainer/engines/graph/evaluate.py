"""Estimator.evaluate's run in a TF1 graph, as tf.estimator does it.

The Estimator builds the graph (trainer/facade/estimator.py,
_evaluate_build_graph: global_step, the input_fn's features and labels, the
model_fn's EVAL spec and a `loss` metric). TF core's evaluation loop then
restores the checkpoint (the given one, else model_dir's latest; without
one, variables are initialised), runs every metric's update op on each
batch (`steps` batches, or until the input ends) and every value op once,
after the last update. The result, with `global_step`, is written to
model_dir/eval[_NAME] as a summary at that step, followed by a
`checkpoint_path` summary.
"""

import tensorflow as tf

from trainer.compat import tf_private
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


def run(config, session_config, checkpoint_path, scaffold, update_op,
        eval_dict, hooks, output_dir):
  """Runs a built evaluation in the default graph (on `checkpoint_path`'s
  variables, or as `scaffold` initialises them) and writes Estimator's
  summaries to output_dir; the result dict. A checkpoint that does not
  fit the model is refused first (CheckpointMismatchError)."""
  checkpoint_fit.check_saver(scaffold.saver if scaffold else None,
                             checkpoint_path)
  results = tf_private.evaluate_once(
      checkpoint_path=checkpoint_path, master=config.evaluation_master,
      scaffold=scaffold, eval_ops=update_op, final_ops=eval_dict,
      hooks=hooks, config=session_config)
  step = results[_v1.GraphKeys.GLOBAL_STEP]
  eval_summaries.write_eval_summary(output_dir, results, step,
                                    checkpoint_path)
  return results
