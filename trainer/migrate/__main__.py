r"""From an Estimator model_fn and its checkpoint to a TF2 program you own.

  python -m trainer.migrate --model=MODULE:FN --input=MODULE:FN \
      --model_dir=ESTIMATOR_DIR --output_dir=OUT [your model's flags]
  python -m trainer.migrate --verify --output_dir=OUT ... (the same flags)

--model, --input (--eval_input, --predict_input, --serving_input_fn) and the
model's own flags are read as `python -m trainer.main` reads them. The
model_fn is built once per mode in a TF1 graph to learn what its spec does;
then OUT/ gets model.py (a tf-keras Model around your model_fn, the rest
TF2), train.py (the program: absl flags, tf.distribute, CheckpointManager,
preemption), tf1_bridge.py, config.py, optimizer.py; checkpoint/ (the newest
checkpoint of ESTIMATOR_DIR, object-based, optimizer slots and step
included); saved_model/ (the Estimator export's signatures); and
report.json: forward outputs, loss, gradients, --compare_steps training
steps, evaluation metrics and served outputs of the generated model against
the model_fn under the tf2 runner from the same checkpoint and batches,
with tolerances from the dtypes (trainer/verify_migration.py). A table of
it is printed. `"equivalent": true` only when every comparison holds and
nothing was left unconverted.

--verify re-runs the comparison on an existing OUT (after you edited
model.py), against ESTIMATOR_DIR's checkpoint.

Exit status: 0 equivalent; 1 an error (one line saying what to do), or a
construct that cannot be migrated (nothing written); 3 written but not
equivalent (report.json says where). Needs TensorFlow >= 2.16 with
tf-keras; ESTIMATOR_DIR may have been written by TF 2.15's Estimator.
"""

import importlib.metadata
import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup


def _version_error():
  """One line when this TensorFlow is older than 2.16, else None (read
  from the package metadata, before TensorFlow is imported)."""
  try:
    version = tuple(int(p) for p in importlib.metadata.version(
        'tensorflow').split('.')[:2])
  except (importlib.metadata.PackageNotFoundError, ValueError):
    return None
  if version < (2, 16):
    return (f'error: trainer.migrate needs TensorFlow >= 2.16 with tf-keras '
            f'(this is {version[0]}.{version[1]}): run it on the modern or '
            'newest lane. A model_dir written by TF 2.15\'s Estimator is fine '
            'as --model_dir.')
  return None


if __name__ == '__main__':  # Before TensorFlow's first import.
  if _version_error():
    sys.exit(_version_error())
  startup.prepare(sys.argv)
  if startup.missing_keras():
    sys.exit(f'error: {startup.missing_keras()}')

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

import flags as trainer_flags
from trainer import user_flags
from trainer.migrate import cli
from trainer.runners import registry as runners
# pylint: enable=g-import-not-at-top,wrong-import-position


def main(argv):
  sys.exit(cli.main(argv))


if __name__ == '__main__':
  # The team's modules may name tf.estimator at import; --helpfull lists
  # TensorFlow's own flags: both after TensorFlow is imported (--help and
  # flag errors come before it).
  if user_flags.names_modules(sys.argv) or '--helpfull' in sys.argv[1:]:
    from trainer.facade import install as facade  # pylint: disable=g-import-not-at-top
    facade.install()
  try:
    user_flags.define_all(sys.argv, trainer_flags.define_flags)
    runners.add_flag_validator()
  except user_flags.FlagClashError as e:
    sys.exit(f'FATAL Flags parsing error: {e}')
  cli.define_flags()
  if startup.wants_help(sys.argv):
    sys.exit(startup.print_help(sys.argv, 'python -m trainer.migrate',
                                __doc__, flags.FLAGS))
  app.run(main)
