"""TF1 name-based checkpoints of the tf2 runner, readable by Estimator.

The same format and names a TPUEstimator writes (MODEL_DIR/model.ckpt-STEP,
the `checkpoint` state file, keys = TF1 variable names), written and read by
a tf.compat.v1 Saver over the model_fn's variables, so training can move
between the estimator and tf2 runners in both directions.
`ModuleCheckpoints` keeps one over a ModelFnModule's variables as traces
create them.
"""

import os

from absl import logging
import tensorflow as tf

from trainer.guard import checkpoint_fit

CHECKPOINT_BASENAME = 'model.ckpt'


class NameBasedCheckpoints:
  """Saves and restores {TF1 name: variable} in `directory`.

  Distributed variables are written from their first local copy and restored
  into every copy (assigned in `strategy`'s cross-replica context).
  """

  def __init__(self, variables_by_name, directory, max_to_keep,
               strategy=None):
    if not variables_by_name:
      raise ValueError('NameBasedCheckpoints: the model_fn made no variables.')
    self._directory = directory
    self._strategy = strategy or tf.distribute.get_strategy()
    self._variables = dict(variables_by_name)
    self._primaries = {
        name: self._strategy.experimental_local_results(v)[0]
        for name, v in self._variables.items()}
    self._names = sorted(variables_by_name)
    self._saver = tf.compat.v1.train.Saver(
        var_list=self._primaries, max_to_keep=max_to_keep,
        save_relative_paths=True)
    state = tf.train.get_checkpoint_state(directory)
    if state is not None:
      self._saver.recover_last_checkpoints(
          list(state.all_model_checkpoint_paths))

  def latest(self):
    """The newest checkpoint prefix in the directory, or None."""
    return tf.train.latest_checkpoint(self._directory)

  def restore(self, path):
    """Restores every variable from `path`; CheckpointMismatchError naming
    each variable it lacks or holds with another shape or dtype first."""
    checkpoint_fit.check_var_list(self._primaries, path)
    self._saver.restore(None, path)
    with self._strategy.scope():
      for name, variable in self._variables.items():
        primary = self._primaries[name]
        if variable is not primary:
          variable.assign(primary.read_value())
    logging.info('Restored %s.', path)

  def save(self, step):
    """Writes MODEL_DIR/model.ckpt-STEP; returns its prefix."""
    tf.io.gfile.makedirs(self._directory)
    path = self._saver.save(
        None, os.path.join(self._directory, CHECKPOINT_BASENAME),
        global_step=step, write_meta_graph=False)
    logging.info('Saved checkpoint %s.', path)
    return path


class ModuleCheckpoints:
  """Checkpoints of a ModelFnModule, whose variables appear trace by trace.

  Writes to `directory`; restores from `restore_dir`'s checkpoints
  (model_dir; a non-chief worker writes apart, in its own `directory`).
  Covers the module's global variables, as a TF1 Saver does (not its
  LOCAL_VARIABLES, e.g. metric accumulators).
  """

  def __init__(self, module, directory, restore_dir, max_to_keep, strategy):
    self._module = module
    self._directory = directory
    self._restore_dir = restore_dir
    self._max_to_keep = max_to_keep
    self._strategy = strategy
    self._checkpoints = None
    self._names = None

  @property
  def built(self):
    """True once a trace made variables."""
    return self._checkpoints is not None

  def track_new_variables(self):
    """Covers the variables the latest trace created; True if there were."""
    variables = self._module.variables_by_name()
    if self._checkpoints is not None and variables.keys() == self._names:
      return False
    self._names = variables.keys()
    self._checkpoints = NameBasedCheckpoints(
        variables, self._directory, self._max_to_keep, self._strategy)
    return True

  def keep_at_most(self, max_to_keep):
    """Keeps the newest `max_to_keep` checkpoints from the next save on."""
    if max_to_keep == self._max_to_keep:
      return
    self._max_to_keep = max_to_keep
    if self._checkpoints is not None:
      self._checkpoints = NameBasedCheckpoints(
          self._module.variables_by_name(), self._directory, max_to_keep,
          self._strategy)

  def restore(self, path):
    """Restores every tracked variable from checkpoint prefix `path`."""
    self._checkpoints.restore(path)

  def save(self, step):
    """Writes DIRECTORY/model.ckpt-`step`; returns its prefix."""
    return self._checkpoints.save(step)
