"""Trainer entry point: parse flags into one Config, run the chosen mode.

  python -m trainer.main                      # MLP on the embedded digits
  python -m trainer.main --tpu=$TPU_NAME --flagfile=configs/resnet50_imagenet.cfg

Exit status: 0 done; 1 error, its first line saying what is at fault and
what to do (TRAINER_TRACEBACK=1 adds the traceback of a known failure; an
exception raised in a user's model module keeps its traceback); 143
preempted by SIGTERM, 130 interrupted by SIGINT (Ctrl-C), after writing a
checkpoint when training (run it again to continue).

Start-up before TensorFlow: --help, a flag error, a bad TF_CONFIG and a
model_dir another trainer holds are answered before TensorFlow is
imported (when no --model/--input names a module of the user's, which may
import it); the model_dir lock of a training chief is taken then too.
"""

import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup

if __name__ == '__main__':  # Before TensorFlow's first import.
  startup.prepare(sys.argv)
  if startup.missing_keras():
    sys.exit(f'error: {startup.missing_keras()}')

import logging as logging_lib
import os
import signal
import tempfile

from absl import app
from absl import flags
from absl import logging

import flags as trainer_flags
from trainer import params as params_lib
from trainer import user_flags
from trainer.guard import lock
from trainer.runners import registry as runners
from trainer.runtime import failures
from trainer.runtime import training_modes
from trainer.runtime import tf_config

FLAGS = flags.FLAGS
# pylint: disable=g-import-not-at-top  (TensorFlow's modules: after start-up)


def _log_once():
  """TF's logger has its own handler and also propagates to absl's: keep one."""
  tf_logger = logging_lib.getLogger('tensorflow')
  for handler in list(tf_logger.handlers):
    tf_logger.removeHandler(handler)


def resolve_input_fns(config):
  """{'train', 'eval', 'infer': input_fn} of --input, --eval_input and
  --predict_input (each defaulting to the one before)."""
  from trainer.models import registry
  train = registry.resolve_input_fn(config.input)
  evaluate = (registry.resolve_input_fn(config.eval_input, 'eval_input')
              if config.eval_input else train)
  infer = (registry.resolve_input_fn(config.predict_input, 'predict_input')
           if config.predict_input else evaluate)
  return {'train': train, 'eval': evaluate, 'infer': infer}


def main(argv):
  try:
    _main(argv)
  except KeyboardInterrupt:  # Ctrl-C outside training: nothing to save.
    print('interrupted (SIGINT) outside training: nothing was being '
          'trained; run the same command again.', file=sys.stderr)
    raise SystemExit(128 + signal.SIGINT) from None
  except Exception as e:  # pylint: disable=broad-except
    # One line naming the cause first (trainer/runtime/failures.py).
    failures.print_report(e, failures.Where('main'), prefix='')
    raise SystemExit(1) from None


def _start(argv):
  """What needs no TensorFlow: the config, TF_CONFIG, the model_dir and,
  for a training chief, the lock of an existing model_dir (held until the
  process ends; a new one is locked when training creates it)."""
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  try:
    config = params_lib.config_from_flags(FLAGS)
  except ValueError as e:  # A flag at fault: its name and value are said.
    raise SystemExit(f'FATAL Flags parsing error: {e}') from e
  tf_config.check()
  if config.model_dir is None:
    config = params_lib.with_model_dir(config,
                                       tempfile.mkdtemp(prefix='trainer-'))
    logging.info('No --model_dir: using new directory %s', config.model_dir)
  if (training_modes.trains(config.mode) and tf_config.is_chief_task() and
      os.path.isdir(config.model_dir)):  # A new one: nobody else uses it.
    lock.hold(config.model_dir)  # A second job is refused in seconds.
  return config


def _main(argv):
  config = _start(argv)
  # TensorFlow from here on.
  from input_fn import corrupt_records
  from input_fn import record_framing
  from trainer.facade import install as facade
  from trainer.guard import preemption
  from trainer.models import builtin
  from trainer.models import inputs
  from trainer.models import registry
  from trainer.runtime import run_guard
  facade.install()  # Before model modules name tf.estimator (TF >= 2.16).
  _log_once()
  startup.quiet_tensorflow_logger()
  user_flags.log_shared()
  try:
    # Imported before parsing (user_flags), resolved here, once.
    model_fn = registry.resolve_model_fn(config.model)
    input_fns = resolve_input_fns(config)
    serving_input_fn = config.serving_input_fn and (
        registry.resolve_serving_input_fn(config.serving_input_fn))
    extra = inputs.check_inputs(config)  # Before any graph is built.
  except (corrupt_records.CorruptRecordError,  # Name the file (and offset).
          record_framing.DanglingLinkError) as e:
    raise SystemExit(f'error: {e}') from e
  except ValueError as e:  # A flag at fault: its name and value are said.
    raise SystemExit(f'FATAL Flags parsing error: {e}') from e
  try:
    model_keys = builtin.fingerprint_keys(config.model)
    with run_guard.guarded(config, model_keys,
                           inputs.naming_corrupt_files(config)):
      result = dict(runners.run(config, model_fn, input_fns,
                                serving_input_fn), **extra)
  except preemption.PreemptedError as e:
    logging.warning('%s', e)
    print(f'{"interrupted" if e.exit_status == 130 else "preempted"}: {e}',
          file=sys.stderr)
    raise SystemExit(e.exit_status) from e
  for key, value in result.items():
    print(f'{key}: {value}')


if __name__ == '__main__':
  # A user's model module may name tf.estimator; --helpfull lists
  # TensorFlow's own flags: both after TensorFlow is imported.
  if user_flags.names_modules(sys.argv) or '--helpfull' in sys.argv[1:]:
    from trainer.facade import install as facade_install
    facade_install.install()
  try:  # Model modules first: their own flags can then be set.
    user_flags.define_all(sys.argv, trainer_flags.define_flags)
    runners.add_flag_validator()
  except user_flags.FlagClashError as e:
    sys.exit(f'FATAL Flags parsing error: {e}')
  if startup.wants_help(sys.argv):
    sys.exit(startup.print_help(sys.argv, 'python -m trainer.main', __doc__,
                                FLAGS))
  app.run(main)
