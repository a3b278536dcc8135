"""trainer.migrate's own flags and its main: the model's flags are the
trainer's (trainer/params.py, trainer/user_flags.py, trainer/models/)."""

import os
import sys

from absl import flags

from trainer import params as params_lib
from trainer import user_flags
from trainer.api import errors
from trainer.models import registry

FLAGS = flags.FLAGS
NOT_EQUIVALENT_STATUS = 3


def define_flags():
  flags.DEFINE_string('output_dir', None,
                      'Where the generated program goes (a directory whose '
                      'name is a Python identifier: it is a package).')
  flags.DEFINE_boolean('verify', False,
                       'Only compare the program already in --output_dir '
                       'with the model_fn (after editing model.py).')
  flags.DEFINE_integer('compare_steps', 3,
                       'Training steps compared, one by one.', lower_bound=1)
  flags.DEFINE_integer('compare_eval_steps', 2,
                       'Evaluation batches compared.', lower_bound=1)


def input_fns(params):
  """{'train', 'eval', 'infer': input_fn spec} of --input, --eval_input and
  --predict_input (each defaulting to the one before), as trainer.main."""
  train = params['input']
  evaluate = params['eval_input'] or train
  return {'train': train, 'eval': evaluate,
          'infer': params['predict_input'] or evaluate}


def _resolve(params):
  specs = input_fns(params)
  flag_of = {'train': 'input', 'eval': 'eval_input', 'infer': 'predict_input'}
  functions = {mode: registry.resolve_input_fn(spec, flag_of[mode])
               for mode, spec in specs.items()}
  serving = params['serving_input_fn'] and (
      registry.resolve_serving_input_fn(params['serving_input_fn']))
  return registry.resolve_model_fn(params['model']), specs, functions, serving


def main(argv):
  """The command; its exit status."""
  if len(argv) > 1:
    print(f'error: unexpected arguments: {" ".join(argv[1:])}',
          file=sys.stderr)
    return 1
  user_flags.log_shared()
  try:
    params = params_lib.config_from_flags(FLAGS).as_params()
    if not FLAGS.output_dir:
      raise ValueError('--output_dir is required: where the generated '
                       'program goes.')
    if not params['model_dir']:
      raise ValueError('--model_dir is required: the Estimator model_dir '
                       'whose newest checkpoint is migrated.')
    model_fn, specs, functions, serving = _resolve(params)
  except ValueError as e:
    print(f'FATAL Flags parsing error: {e}', file=sys.stderr)
    return 1
  # TensorFlow from here on (--help and flag errors come before it).
  from trainer.facade import install as facade  # pylint: disable=g-import-not-at-top
  from trainer.migrate import migration  # pylint: disable=g-import-not-at-top
  facade.install()  # Idempotent; model code may name tf.estimator.
  from trainer.migrate import trace  # pylint: disable=g-import-not-at-top
  try:
    run = migration.Migration(
        params, model_fn, specs, functions, serving,
        os.path.abspath(FLAGS.output_dir), FLAGS.compare_steps,
        FLAGS.compare_eval_steps)
    report = run.verify() if FLAGS.verify else run.migrate()
  except trace.RefusedError as e:
    print(f'error: cannot migrate: {e}', file=sys.stderr)
    return 1
  except (errors.TrainerError, ValueError) as e:
    print(f'error: {e}', file=sys.stderr)
    return 1
  print(report.table())
  return 0 if report.equivalent else NOT_EQUIVALENT_STATUS
