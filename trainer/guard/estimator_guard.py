"""What `python -m trainer.legacy` adds around a program's Estimator calls.

The launcher wraps Estimator.train and Estimator.evaluate (the real
Estimator on TF 2.15, the facade on later versions; every subclass,
TPUEstimator and the canned ones included) with these:

`train`: on the task that writes checkpoints (RunConfig.is_chief: the
chief, the master, or a job without TF_CONFIG) it takes the model_dir lock
and keeps it until the process ends (a program may train, evaluate and
train again), then recovers an interrupted save (checkpoint_recovery);
workers, parameter servers and evaluators never lock. On every task
SIGTERM / SIGINT stop training after the running step: a hook asks the
session to stop, Estimator's CheckpointSaverHook writes the checkpoint of
that step, and the program ends with StoppedBySignal (exit 143 / 130). A
write the storage refuses is one StorageError naming the directory. A
failure keeps, for its report (trainer/runtime/failures.py), the step it
happened at and the model_dir.

`evaluate`: before evaluating the latest checkpoint of a model_dir no
trainer holds, the same recovery (so a restart that evaluates first does
not fail on a broken newest checkpoint); an evaluation running inside
training (train_and_evaluate) stops at once on a signal.
"""

import os

import tensorflow as tf

from trainer.guard import checkpoint_files
from trainer.guard import checkpoint_recovery
from trainer.guard import failure_parts
from trainer.guard import lock
from trainer.guard import preemption
from trainer.guard import session_hooks
from trainer.guard import storage


def _latest_step(model_dir):
  path = tf.train.latest_checkpoint(model_dir)
  return checkpoint_files.step_of(os.path.basename(path)) if path else 0


def train(estimator, run):
  """Runs `run(extra_hooks)`, the program's Estimator.train given extra
  hooks, as the module docstring says; returns what it returns."""
  model_dir = estimator.model_dir
  config = estimator.config
  writer = bool(config.is_chief)
  if writer:
    with storage.reporting_write_failures(model_dir, owner=False):
      lock.hold(model_dir)
      checkpoint_recovery.recover(model_dir, config.keep_checkpoint_max)
  recorder = session_hooks.StepRecorderHook()
  with preemption.handling_signals(model_dir if writer else None):
    try:
      with storage.reporting_write_failures(model_dir, owner=writer):
        result = run([session_hooks.StopOnSignalHook(), recorder])
    except preemption.PreemptedError as e:  # Evaluating inside training.
      raise preemption.StoppedBySignal(str(e), e.exit_status) from None
    except Exception as e:  # For its report: where it happened.
      failure_parts.note(e, step=recorder.step, model_dir=model_dir)
      raise
    if preemption.requested():
      raise preemption.StoppedBySignal(
          preemption.stopped_message(_latest_step(model_dir), model_dir),
          preemption.exit_status())
  return result


def evaluate(estimator, run, checkpoint_path=None):
  """Runs `run(extra_hooks)`, the program's Estimator.evaluate given extra
  hooks, as the module docstring says; returns what it returns."""
  model_dir = estimator.model_dir
  config = estimator.config
  # Inside training (train_and_evaluate's evaluation after a checkpoint):
  # stopping, so no evaluation starts.
  preemption.raise_if_requested(_latest_step(model_dir), model_dir)
  with storage.reporting_write_failures(model_dir, owner=False):
    if checkpoint_path is None and config.is_chief and (
        not lock.held_here(model_dir)):
      with lock.holding_briefly(model_dir) as holding:
        if holding:
          checkpoint_recovery.recover(model_dir, config.keep_checkpoint_max)
    return run([session_hooks.AbortOnSignalHook(model_dir)])
