"""Estimator.predict in a TF1 graph, as tf.estimator does it.

One graph per call: global_step, the input_fn's features (labels dropped),
the model_fn's PREDICT spec; a MonitoredSession restores the checkpoint
(the given one, else model_dir's latest; without one, variables are
initialised and the warm start applied) and runs the predictions until the
input ends, yielding one example at a time (a dict per example for dict
predictions) or, with yield_single_examples=False, whole batches.
predict_keys keeps only those keys of dict predictions.
"""

import tensorflow as tf

from trainer.api import specs
from trainer.compat import tf_private
from trainer.engines.graph import inputs
from trainer.engines.graph import program as program_lib
from trainer.guard import checkpoint_fit
from trainer.runtime import predictions as predictions_lib

_v1 = tf.compat.v1


def _extract_keys(predictions, predict_keys):
  if not predict_keys:
    return predictions
  if not isinstance(predictions, dict):
    raise ValueError(
        'predict_keys argument is not valid in case of non-dict predictions.')
  kept = {k: v for k, v in predictions.items() if k in predict_keys}
  if not kept:
    raise ValueError(f'Expected to run at least one output from '
                     f'{predictions.keys()}, provided {predict_keys}.')
  return kept


def predict(program, input_fn, predict_keys=None, hooks=(),
            checkpoint_path=None, yield_single_examples=True):
  """Yields predictions (see module docstring)."""
  with tf_private.graph_mode():
    yield from _predict(program, input_fn, predict_keys, hooks,
                        checkpoint_path, yield_single_examples)


def _predict(program, input_fn, predict_keys, hooks, checkpoint_path,
             yield_single_examples):
  if not checkpoint_path:
    checkpoint_path = tf.train.latest_checkpoint(program.model_dir)
  if not checkpoint_path:
    _v1.logging.info(
        f'Could not find trained model in model_dir: {program.model_dir}, '
        'running initialization to predict.')
  graph = program_lib.new_graph(program)
  with graph.as_default():
    program_lib.create_global_step(program, graph)
    features, _, input_hooks = inputs.features_and_labels(
        program.call_input_fn(input_fn, specs.ModeKeys.PREDICT))
    if program.tpu is None and not inputs.uses_dataset_or_queue(features):
      _v1.logging.warning(
          'Input graph does not use tf.data.Dataset or contain a QueueRunner. '
          'That means predict yields forever. This is probably a mistake.')
    spec = program.call_model_fn(features, None, specs.ModeKeys.PREDICT)
    if not checkpoint_path and program.warm_start:
      _v1.logging.info('Warm-starting with WarmStartSettings: %s',
                       program.warm_start)
      _v1.train.warm_start(*program.warm_start)
    predictions = _extract_keys(spec.predictions, predict_keys)
    all_hooks = list(input_hooks) + list(hooks) + list(
        spec.prediction_hooks or ())
    checkpoint_fit.check_saver(spec.scaffold.saver, checkpoint_path)
    creator = _v1.train.ChiefSessionCreator(
        checkpoint_filename_with_path=checkpoint_path,
        master=program.config.master, scaffold=spec.scaffold,
        config=program.session_config)
    with _v1.train.MonitoredSession(session_creator=creator,
                                    hooks=all_hooks) as session:
      while not session.should_stop():
        values = session.run(predictions)
        if not yield_single_examples:
          yield values
        elif not isinstance(predictions, dict):
          yield from values
        else:
          for i in range(predictions_lib.batch_length(values)):
            yield {key: value[i] for key, value in values.items()}
