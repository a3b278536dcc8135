"""SessionRunHooks under the facade: which run, how, and which fail clearly.

The hook classes are TF core's own (tf.compat.v1.train.*, what tf.estimator
re-exported). The tf2 runner drives them without a Session
(trainer/runners/tf2/session_hooks.py): LoggingTensorHook, NanTensorHook,
StepCounterHook, SummarySaverHook, StopAtStepHook and hooks written the same way
see their tensors' values at every step; a CheckpointSaverHook on model_dir sets
the call's checkpoint cadence and its listeners are called around each save
(trainer/runners/tf2/checkpoint_listeners.py). A hook that runs other graph
tensors in a session fails with HookNeedsSessionError naming it. ProfilerHook,
FeedFnHook and FinalOpsHook need a Session by design: they fail before training
with UnsupportedHookError naming what to do instead.
"""

import tensorflow as tf

from trainer.api import errors
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


class UnsupportedHookError(errors.TrainerError, NotImplementedError):
  """A hook the facade cannot honour without a Session."""


_ALTERNATIVES = {
    ProfilerHook: (
        'it traces session.run calls; call tf.profiler.experimental.start() '
        'and stop() around train()'),
    FeedFnHook: (
        'feed_dict has no meaning without a Session; feed data through the '
        'input_fn\'s tf.data.Dataset'),
    FinalOpsHook: (
        'it runs ops in the final Session; read values after train() with '
        'get_variable_value() or compute them in evaluate()'),
}


def unsupported(hook, where):
  """UnsupportedHookError naming the hook, where it came from and what to do."""
  return UnsupportedHookError(
      f'{type(hook).__name__} in {where} is not supported by trainer.legacy '
      f'on TensorFlow {tf.__version__}: {_ALTERNATIVES[type(hook)]}.')


def check_hooks(hooks, where):
  """hooks as a list; TypeError (Estimator's) if one is no SessionRunHook."""
  hooks = list(hooks or [])
  for hook in hooks:
    if not isinstance(hook, SessionRunHook):
      raise TypeError(f'Hooks must be a SessionRunHook, given: {hook!r} '
                      f'(in {where}).')
  return hooks


def refuse_unsupported(hooks, where):
  """Raises UnsupportedHookError for a hook that needs a Session by design."""
  for hook in hooks:
    if type(hook) in _ALTERNATIVES:
      raise unsupported(hook, where)


def stop_step(hooks, start_step):
  """The step StopAtStepHooks in `hooks` stop at (None if there is none)."""
  last = None
  for hook in hooks:
    if type(hook) is StopAtStepHook:
      num_steps, last_step = facade_private.stop_hook_config(hook)
      step = last_step if last_step is not None else start_step + num_steps
      last = step if last is None else min(last, step)
  return last
