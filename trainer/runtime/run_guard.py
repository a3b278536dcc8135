"""What every runner gets around a run: input checks before any graph, and
for training a model_dir lock, the configuration check, recovery from an
interrupted save and SIGTERM handling; data loss errors name the file.
"""

import contextlib

from input_fn import tfrecord
from trainer.guard import checkpoint_recovery
from trainer.guard import fingerprint
from trainer.guard import lock
from trainer.guard import preemption
from trainer.runtime import tf_config

TRAINING_MODES = ('train', 'train_and_evaluate')
_SPLITS = {  # mode -> splits read, as tfrecord's `training` argument.
    'train': (True,), 'evaluate': (False,), 'train_and_evaluate': (True, False),
    'predict': (False,), 'export': ()}


def splits(params):
  """The TFRecord splits params['mode'] reads (none for other inputs)."""
  if params['input'] != 'tfrecord':
    return ()
  return _SPLITS[params['mode']]


def check_inputs(params):
  """Raises ValueError naming the file pattern if a split has no files.

  With skip_corrupt_records, scans the splits once and returns
  {'skipped_corrupt_records': N}; otherwise {}.
  """
  for training in splits(params):
    tfrecord.list_files(params, training)
  if not params['skip_corrupt_records']:
    return {}
  return {'skipped_corrupt_records': sum(
      tfrecord.report_corrupt_records(params, training)
      for training in splits(params))}


@contextlib.contextmanager
def guarded(params):
  """Runs the block as the one trainer of params['model_dir'] (training
  modes) after checking the configuration stored there."""
  with tfrecord.naming_corrupt_files(params, splits(params)):
    if params['mode'] not in TRAINING_MODES:
      fingerprint.check(params, training=False)
      yield
      return
    if not tf_config.is_chief_task():  # Multi-worker: the chief guards.
      fingerprint.check(params, training=False)
      with preemption.handling_sigterm():  # Every worker stops on SIGTERM.
        yield
      return
    with lock.locked(params['model_dir']):
      fingerprint.check(params, training=True,
                            overwrite=params['overwrite_model_dir'])
      checkpoint_recovery.recover(params['model_dir'],
                                  params['keep_checkpoint_max'])
      with preemption.handling_sigterm():
        yield
