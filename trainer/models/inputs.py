"""What the trainer knows of the built-in inputs (--input tfrecord,
synthetic) beyond their input_fns: which TFRecord splits a --mode reads,
their checks before any graph is built, the evaluation steps a pass over
them takes and the name of a corrupt file behind a data-loss error.

The front ends (trainer.main, trainer/runners/registry.py) ask here and
pass the answers down: the runtime (trainer/runtime/run_guard.py,
modes.py) imports no input_fn/ and inspects no input name. Each function
takes the run's trainer.config.Config; input_fn/ gets its params dict.
"""

import contextlib

from absl import logging

# pylint: disable=g-import-not-at-top  (TensorFlow: input_fn/ on first use)

_SPLITS = {  # mode -> splits read, as tfrecord's `training` argument.
    'train': (True,), 'evaluate': (False,), 'train_and_evaluate': (True, False),
    'predict': (False,), 'export': ()}


def splits(config):
  """The TFRecord splits config.mode reads (none for other inputs)."""
  if config.input != 'tfrecord':
    return ()
  return _SPLITS[config.mode]


def check_inputs(config):
  """Raises ValueError naming the file pattern if a split has no files,
  TruncatedRecordError naming a local file cut inside a record.

  With skip_corrupt_records, scans the splits once and returns
  {'skipped_corrupt_records': N}; otherwise {}.
  """
  from input_fn import tfrecord
  params = config.as_params()
  for training in splits(config):
    tfrecord.check_not_cut(tfrecord.list_files(params, training), params)
  if not config.skip_corrupt_records:
    return {}
  return {'skipped_corrupt_records': sum(
      tfrecord.report_corrupt_records(params, training)
      for training in splits(config))}


def naming_corrupt_files(config):
  """A context turning a DataLossError raised inside into a
  CorruptRecordError naming the corrupt file(s) of the splits config.mode
  reads (trainer/runtime/run_guard.guarded's `input_errors`)."""
  if not splits(config):
    return contextlib.nullcontext()
  from input_fn import tfrecord
  return tfrecord.naming_corrupt_files(config.as_params(), splits(config))


def eval_steps(config):
  """Evaluation steps: --eval_steps, or one pass over the TFRecord eval
  split (trainer/runtime/modes.run's `eval_steps`).

  Returns None (run until the input ends) for user input_fns without
  --eval_steps; raises ValueError where the input never ends.
  """
  if config.eval_steps:
    return config.eval_steps
  if config.input == 'synthetic':
    raise ValueError('--eval_steps must be set with synthetic input, which '
                     'never ends.')
  if config.input != 'tfrecord':
    if config.use_tpu:
      raise ValueError('--eval_steps must be set on TPU for input '
                       f'{config.input!r}.')
    return None
  from input_fn import tfrecord
  examples = tfrecord.count_records(config.as_params(), training=False)
  batch = config.eval_batch_size
  steps = examples // batch
  if steps == 0:
    raise ValueError(f'--eval_batch_size={batch} exceeds the {examples} '
                     f'evaluation examples in {config.data_dir}.')
  logging.info('Evaluating %d steps of %d: %d of %d examples.', steps,
               batch, steps * batch, examples)
  return steps


def serving_input_receiver_fn(params):
  """The built-in serving_input_receiver_fn (encoded images in,
  input_fn/serving.py) for the params dict the model_fn sees in PREDICT."""
  from input_fn import serving
  return serving.serving_input_receiver_fn_for(params)
