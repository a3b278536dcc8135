"""SessionRunHooks under the facade: which run, and how.

The hook classes are TF core's own (tf.compat.v1.train.*, what tf.estimator
re-exported). The tf2 runner drives them without a Session
(trainer/engines/tf2/hook_runner.py): LoggingTensorHook, NanTensorHook,
StepCounterHook, SummarySaverHook, StopAtStepHook and hooks written the same way
see their tensors' values at every step; a CheckpointSaverHook on model_dir sets
the call's checkpoint cadence and its listeners are called around each save
(trainer/engines/tf2/checkpoint_listeners.py). A hook that runs other graph
tensors in a session fails with HookNeedsSessionError naming it.
"""

import tensorflow as tf

from trainer.compat import facade_private

_train = tf.compat.v1.train
SessionRunHook = _train.SessionRunHook
SessionRunArgs = _train.SessionRunArgs
SessionRunContext = _train.SessionRunContext
SessionRunValues = _train.SessionRunValues
CheckpointSaverListener = _train.CheckpointSaverListener
CheckpointSaverHook = _train.CheckpointSaverHook
FeedFnHook = _train.FeedFnHook
FinalOpsHook = _train.FinalOpsHook
GlobalStepWaiterHook = _train.GlobalStepWaiterHook
LoggingTensorHook = _train.LoggingTensorHook
NanTensorHook = _train.NanTensorHook
ProfilerHook = _train.ProfilerHook
StepCounterHook = _train.StepCounterHook
StopAtStepHook = _train.StopAtStepHook
SummarySaverHook = _train.SummarySaverHook
SecondOrStepTimer = facade_private.SecondOrStepTimer
NanLossDuringTrainingError = facade_private.NanLossDuringTrainingError


def stop_step(hooks, start_step):
  """The step StopAtStepHooks in `hooks` stop at (None if there is none)."""
  last = None
  for hook in hooks:
    if type(hook) is StopAtStepHook:
      num_steps, last_step = facade_private.stop_hook_config(hook)
      step = last_step if last_step is not None else start_step + num_steps
      last = step if last is None else min(last, step)
  return last
