"""SessionRunHooks under the facade: which run, how, and which fail clearly.

The hook classes are TF core's own (tf.compat.v1.train.*, what tf.estimator
re-exported). The tf2 runner has no Session, so each standard hook is
honoured by what it means:
  StopAtStepHook       the last step of this train() call;
  CheckpointSaverHook  on model_dir: the checkpoint cadence of this call
                       (steps or secs) and its CheckpointSaverListeners;
  LoggingTensorHook,   driven on the host with the values of their tensors
  NanTensorHook        at every step, fetched through the spec's host_call;
and every other hook (StepCounterHook, SummarySaverHook, ProfilerHook,
FeedFnHook, FinalOpsHook, GlobalStepWaiterHook, user SessionRunHooks) fails
before training with UnsupportedHookError naming the hook and what to do.
"""

import os

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


class UnsupportedHookError(NotImplementedError):
  """A hook the facade cannot honour without a Session."""


_ALTERNATIVES = {
    StepCounterHook: (
        'it times session.run calls; the facade logs steps/sec once per '
        'loop itself (`train | step: N | steps/sec: ...`): remove the hook'),
    SummarySaverHook: (
        'it runs summary ops in a Session; return the tensors in '
        'TPUEstimatorSpec(host_call=(fn, tensors)) and write them with '
        'tf.summary in fn'),
    ProfilerHook: (
        'it traces session.run calls; call tf.profiler.experimental.start() '
        'and stop() around train()'),
    FeedFnHook: (
        'feed_dict has no meaning without a Session; feed data through the '
        'input_fn\'s tf.data.Dataset'),
    FinalOpsHook: (
        'it runs ops in the final Session; read values after train() with '
        'get_variable_value() or compute them in evaluate()'),
    GlobalStepWaiterHook: (
        'workers wait for the chief in parameter-server training only; '
        'remove the hook'),
}


def unsupported(hook, where):
  """UnsupportedHookError naming the hook, where it came from and what to do."""
  kind = type(hook).__name__
  alternative = _ALTERNATIVES.get(type(hook), (
      'a custom SessionRunHook needs a tf.compat.v1.Session, which the tf2 '
      'runner does not have; move its per-step tensors into '
      'TPUEstimatorSpec(host_call=...) or do its work after train() '
      'returns'))
  return UnsupportedHookError(
      f'{kind} in {where} is not supported by trainer.legacy on TensorFlow '
      f'{tf.__version__}: {alternative}.')


def check_hooks(hooks, where):
  """hooks as a list; TypeError (Estimator's) if one is no SessionRunHook."""
  hooks = list(hooks or [])
  for hook in hooks:
    if not isinstance(hook, SessionRunHook):
      raise TypeError(f'Hooks must be a SessionRunHook, given: {hook!r} '
                      f'(in {where}).')
  return hooks


def is_tensor_hook(hook):
  """Whether the host can drive `hook` from its tensors' values alone."""
  return type(hook) in (LoggingTensorHook, NanTensorHook)


def tensor_hook_fetches(hook):
  """{tag: tensor, variable or graph-element name} the hook reads per step."""
  if type(hook) is LoggingTensorHook:
    return facade_private.logging_hook_config(hook)['tensors']
  config = facade_private.nan_hook_config(hook)
  if not config['fail']:
    raise UnsupportedHookError(
        'NanTensorHook(fail_on_nan_loss=False) is not supported by '
        'trainer.legacy: stopping quietly mid-loop is not possible; use '
        'fail_on_nan_loss=True (the default).')
  return {'loss': config['tensor']}


class _NoSession:
  """Stands for the Session argument of a hook or listener; any use fails."""

  def __init__(self, owner, values=None):
    self._owner = owner
    self._values = values

  def run(self, fetches, *args, **kwargs):
    del args, kwargs
    if self._values is not None and isinstance(fetches, dict) and all(
        key in self._values for key in fetches):
      return {key: self._values[key] for key in fetches}
    raise NotImplementedError(
        f'{self._owner} called session.run: the tf2 runner under '
        'trainer.legacy has no tf.compat.v1.Session.')

  def __getattr__(self, name):
    raise NotImplementedError(
        f'{self._owner} used session.{name}: the tf2 runner under '
        'trainer.legacy has no tf.compat.v1.Session.')


class HostTensorHooks:
  """Drives LoggingTensorHooks and NanTensorHooks on per-step values.

  step(values) for every step in order, with values = [{tag: numpy value}
  per hook]; end() after the last step. begin() happens at the first step
  (or when called): a model_fn traced again makes new spec hooks.
  """

  def __init__(self, hooks):
    self.hooks = list(hooks)
    self._last = [None] * len(self.hooks)
    self._begun = False

  def begin(self):
    if self._begun:
      return
    self._begun = True
    for hook in self.hooks:
      if type(hook) is LoggingTensorHook:
        facade_private.begin_logging_hook(hook)

  def step(self, values):
    self.begin()
    for i, (hook, value) in enumerate(zip(self.hooks, values)):
      context = SessionRunContext(original_args=None,
                                  session=_NoSession(type(hook).__name__))
      hook.before_run(context)
      results = value if type(hook) is LoggingTensorHook else value['loss']
      hook.after_run(context, SessionRunValues(results=results, options=None,
                                               run_metadata=None))
      self._last[i] = value

  def end(self):
    for hook, value in zip(self.hooks, self._last):
      if type(hook) is LoggingTensorHook and value is not None:
        hook.end(_NoSession(type(hook).__name__, value))


def stop_step(hooks, start_step):
  """The step StopAtStepHooks in `hooks` stop at (None if there is none)."""
  last = None
  for hook in hooks:
    if type(hook) is StopAtStepHook:
      num_steps, last_step = facade_private.stop_hook_config(hook)
      step = last_step if last_step is not None else start_step + num_steps
      last = step if last is None else min(last, step)
  return last


def check_listeners(listeners):
  """listeners as a list; TypeError or UnsupportedHookError if not usable."""
  listeners = list(listeners or [])
  for listener in listeners:
    if not isinstance(listener, CheckpointSaverListener):
      raise TypeError('saving_listeners must be a list of '
                      f'CheckpointSaverListener, given: {listener!r}')
    if type(listener).before_save is not CheckpointSaverListener.before_save:
      raise UnsupportedHookError(
          f'{type(listener).__name__}.before_save is not supported by '
          'trainer.legacy: the tf2 runner writes the checkpoint before the '
          'facade regains control; do the work in after_save.')
  return listeners


class SaveListeners:
  """Calls CheckpointSaverListeners' begin / after_save / end (no Session)."""

  def __init__(self, listeners):
    self._listeners = list(listeners)

  def begin(self):
    for listener in self._listeners:
      listener.begin()

  def after_save(self, step):
    """True if a listener asked training to stop (Estimator's contract)."""
    stop = False
    for listener in self._listeners:
      session = _NoSession(type(listener).__name__)
      stop = bool(listener.after_save(session, step)) or stop
    return stop

  def end(self, step):
    for listener in self._listeners:
      listener.end(_NoSession(type(listener).__name__), step)


def saver_hook_cadence(hook, model_dir):
  """(every_steps, every_secs, listeners) of a CheckpointSaverHook on model_dir.

  Raises UnsupportedHookError for another directory, a custom saver or a
  scaffold: the runner writes model_dir with its own name-based saver.
  """
  config = facade_private.saver_hook_config(hook)
  if os.path.abspath(config['dir']) != os.path.abspath(model_dir):
    raise UnsupportedHookError(
        f'CheckpointSaverHook(checkpoint_dir={config["dir"]!r}) is not '
        'supported by trainer.legacy: checkpoints go to model_dir '
        f'({model_dir}); set RunConfig(save_checkpoints_steps=...) instead.')
  if config['saver'] is not None or config['scaffold'] is not None:
    raise UnsupportedHookError(
        'CheckpointSaverHook(saver=..., scaffold=...) is not supported by '
        'trainer.legacy: the tf2 runner saves with its own name-based saver; '
        'drop the saver/scaffold arguments.')
  return config['every_steps'], config['every_secs'], config['listeners']
