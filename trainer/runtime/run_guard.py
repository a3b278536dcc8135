"""What every runner gets around a run: input checks before any graph, and
for training a model_dir lock, the configuration check, recovery from an
interrupted save and SIGTERM / SIGINT handling; data loss errors name the
file; a full, read-only or unreachable model_dir is one error naming it.
"""

import contextlib

from input_fn import tfrecord
from trainer.guard import checkpoint_recovery
from trainer.guard import fingerprint
from trainer.guard import lock
from trainer.guard import preemption
from trainer.guard import storage
from trainer.runtime import training_modes
from trainer.runtime import tf_config

_SPLITS = {  # mode -> splits read, as tfrecord's `training` argument.
    'train': (True,), 'evaluate': (False,), 'train_and_evaluate': (True, False),
    'predict': (False,), 'export': ()}


def splits(params):
  """The TFRecord splits params['mode'] reads (none for other inputs)."""
  if params['input'] != 'tfrecord':
    return ()
  return _SPLITS[params['mode']]


def check_inputs(params):
  """Raises ValueError naming the file pattern if a split has no files,
  TruncatedRecordError naming a local file cut inside a record.

  With skip_corrupt_records, scans the splits once and returns
  {'skipped_corrupt_records': N}; otherwise {}.
  """
  for training in splits(params):
    tfrecord.check_not_cut(tfrecord.list_files(params, training), params)
  if not params['skip_corrupt_records']:
    return {}
  return {'skipped_corrupt_records': sum(
      tfrecord.report_corrupt_records(params, training)
      for training in splits(params))}


@contextlib.contextmanager
def guarded(params, model_keys=()):
  """Runs the block as the one trainer of params['model_dir'] (training
  modes) after checking the configuration stored there (model_keys: the
  model's own settings in it, trainer/guard/fingerprint.py's). A write the
  storage refuses (full, read-only) or storage out of reach is one
  StorageError naming model_dir; the lock's holder first cleans up what a
  failed save left."""
  model_dir = params['model_dir']
  with tfrecord.naming_corrupt_files(params, splits(params)):
    if not training_modes.trains(params['mode']):
      with storage.reporting_write_failures(model_dir, owner=False):
        fingerprint.check(params, training=False, model_keys=model_keys)
        if tf_config.is_chief_task():  # A model_dir nobody trains: recover.
          with lock.holding_briefly(model_dir) as holding:
            if holding:
              checkpoint_recovery.recover(model_dir,
                                          params['keep_checkpoint_max'])
        yield
      return
    if not tf_config.is_chief_task():  # Multi-worker: the chief guards.
      with storage.reporting_write_failures(model_dir, owner=False):
        fingerprint.check(params, training=False, model_keys=model_keys)
        with preemption.handling_signals():  # Every worker stops on them.
          yield
      return
    with contextlib.ExitStack() as stack:
      with storage.reporting_write_failures(model_dir, owner=False):
        if not lock.held_here(model_dir):  # trainer.main's start held it.
          stack.enter_context(lock.locked(model_dir))
      with storage.reporting_write_failures(model_dir, owner=True):
        fingerprint.check(params, training=True,
                          overwrite=params['overwrite_model_dir'],
                          model_keys=model_keys)
        checkpoint_recovery.recover(model_dir, params['keep_checkpoint_max'])
        with preemption.handling_signals(model_dir):
          yield
