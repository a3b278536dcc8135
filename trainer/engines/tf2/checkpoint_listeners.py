"""CheckpointSaverListeners and CheckpointSaverHooks under the tf2 runner.

Estimator calls a CheckpointSaverListener around every checkpoint its
CheckpointSaverHook writes: `begin()` before training, `before_save` and
`after_save(session, step)` around each save (the first when training
starts), `end(session, step)` after the last one; `after_save` returning
True stops training. The tf2 runner writes its checkpoints itself (loop
policy, trainer/runtime/loop.py) and calls listeners the same way, with a
HostSession (hook_runner.py) for `session`.

A CheckpointSaverHook handed to train() is honoured by what it means: its
cadence (steps or seconds) replaces the run's for that call and its
listeners are called as above. It must save to model_dir with the default
saver: the runner writes model_dir with TF1 names itself.
"""

import os

import tensorflow as tf

from trainer.compat import facade_private
from trainer.engines.tf2 import hook_runner as hooks_lib

CheckpointSaverHook = tf.compat.v1.train.CheckpointSaverHook
CheckpointSaverListener = tf.compat.v1.train.CheckpointSaverListener


def split_saver_hooks(hooks, model_dir):
  """(other hooks, (save_steps, save_secs) or None, listeners) of `hooks`.

  Raises hooks.HookNeedsSessionError for a CheckpointSaverHook writing
  elsewhere than model_dir or with its own saver or scaffold.
  """
  others, cadence, listeners = [], None, []
  for hook in hooks:
    if not isinstance(hook, CheckpointSaverHook):
      others.append(hook)
      continue
    config = facade_private.saver_hook_config(hook)
    if os.path.abspath(config['dir']) != os.path.abspath(model_dir):
      raise hooks_lib.HookNeedsSessionError(
          f'CheckpointSaverHook(checkpoint_dir={config["dir"]!r}): the tf2 '
          f'runner writes checkpoints to model_dir ({model_dir}) only; set '
          'the checkpoint cadence instead (RunConfig.save_checkpoints_steps '
          'or --save_checkpoints_steps).')
    if config['saver'] is not None or config['scaffold'] is not None:
      raise hooks_lib.HookNeedsSessionError(
          'CheckpointSaverHook(saver=..., scaffold=...): the tf2 runner '
          'saves with its own name-based saver; drop those arguments (a '
          'scaffold_fn\'s Saver is used to restore).')
    cadence = (config['every_steps'], config['every_secs'])
    listeners += config['listeners']
  return others, cadence, listeners


def check_listeners(listeners):
  """listeners as a list; TypeError naming any that is not a
  CheckpointSaverListener."""
  listeners = list(listeners or ())
  for listener in listeners:
    if not isinstance(listener, CheckpointSaverListener):
      raise TypeError('saving_listeners must be a list of '
                      f'CheckpointSaverListener, given: {listener!r}')
  return listeners


class Listeners:
  """Calls the listeners of one train() call around its checkpoints."""

  def __init__(self, listeners, global_step):
    self._listeners = check_listeners(listeners)
    self._global_step = global_step  # () -> int

  def __bool__(self):
    return bool(self._listeners)

  def _session(self, listener):
    return hooks_lib.HostSession(
        f'CheckpointSaverListener {type(listener).__name__}', None, {},
        self._global_step)

  def begin(self):
    for listener in self._listeners:
      listener.begin()

  def before_save(self, step):
    for listener in self._listeners:
      listener.before_save(self._session(listener), step)

  def after_save(self, step):
    """True if a listener asks training to stop (Estimator's contract)."""
    stop = False
    for listener in self._listeners:
      stop = bool(listener.after_save(self._session(listener), step)) or stop
    return stop

  def end(self, step):
    for listener in self._listeners:
      listener.end(self._session(listener), step)
