"""What every runner gets around a run: for training a model_dir lock, the
configuration check, recovery from an interrupted save and SIGTERM / SIGINT
handling; data loss errors name the file (the input's own context, passed
down by the front end: trainer/models/inputs.py, which also checks the
input before any graph); a full, read-only or unreachable model_dir is one error naming it.
"""

import contextlib

from trainer.guard import checkpoint_recovery
from trainer.guard import fingerprint
from trainer.guard import lock
from trainer.guard import preemption
from trainer.guard import storage
from trainer.runtime import training_modes
from trainer.runtime import tf_config


@contextlib.contextmanager
def guarded(config, model_keys=(), input_errors=None):
  """Runs the block as the one trainer of config.model_dir (a Config's;
  training modes) after checking the configuration stored there
  (model_keys: the model's own settings in it, trainer/guard/fingerprint.py's).
  input_errors: a context naming the file behind a data-loss error of the
  input (trainer/models/inputs.naming_corrupt_files), or None. A write the
  storage refuses (full, read-only) or storage out of reach is one
  StorageError naming model_dir; the lock's holder first cleans up what a
  failed save left."""
  model_dir = config.model_dir
  with input_errors or contextlib.nullcontext():
    if not training_modes.trains(config.mode):
      with storage.reporting_write_failures(model_dir, owner=False):
        fingerprint.check(config, training=False, model_keys=model_keys)
        if tf_config.is_chief_task():  # A model_dir nobody trains: recover.
          with lock.holding_briefly(model_dir) as holding:
            if holding:
              checkpoint_recovery.recover(model_dir,
                                          config.keep_checkpoint_max)
        yield
      return
    if not tf_config.is_chief_task():  # Multi-worker: the chief guards.
      with storage.reporting_write_failures(model_dir, owner=False):
        fingerprint.check(config, training=False, model_keys=model_keys)
        with preemption.handling_signals():  # Every worker stops on them.
          yield
      return
    with contextlib.ExitStack() as stack:
      with storage.reporting_write_failures(model_dir, owner=False):
        if not lock.held_here(model_dir):  # trainer.main's start held it.
          stack.enter_context(lock.locked(model_dir))
      with storage.reporting_write_failures(model_dir, owner=True):
        fingerprint.check(config, training=True,
                          overwrite=config.overwrite_model_dir,
                          model_keys=model_keys)
        checkpoint_recovery.recover(model_dir, config.keep_checkpoint_max)
        with preemption.handling_signals(model_dir):
          yield
