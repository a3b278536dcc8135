"""A spec's Scaffold, honoured in every mode as TPUEstimator does.

TPUEstimator calls the spec's scaffold_fn (an EstimatorSpec carries the
Scaffold itself) in every mode and gives the Scaffold to its session:
  * with a checkpoint to load, the Scaffold's saver loads it (by default a
    Saver over all variables). An EMA model_fn's evaluation saver maps the
    moving averages (`kernel/ExponentialMovingAverage`) onto the model's
    variables, so evaluation and prediction run on the averages, on every
    replica (an eager Saver takes no distributed variable: it restores each
    one's first copy, which is then mirrored to the others);
  * without one, variables get their initializers, including those
    init_from_checkpoint set (trainer/compat/checkpoint_init.py), then the Scaffold's
    init_op and init_fn run (warm starts).
`load` does the same without a Session. A saver made inside the traced
model_fn is rebuilt outside it (tf1_semantics.eager_saver), also where an
init_fn calls its restore(session, path); an init_op made there cannot run
outside its graph and is refused with an error naming it.
"""

from absl import logging
import tensorflow as tf

from trainer.api import errors
from trainer.compat import checkpoint_init
from trainer.compat import tf1_semantics
from trainer.engines.tf2 import hook_runner as hooks_lib
from trainer.guard import checkpoint_fit


class ScaffoldError(errors.TrainerError, RuntimeError):
  """A Scaffold asks for something the tf2 runner cannot do."""


def make(module, scaffold_fn):
  """The Scaffold of `scaffold_fn` (None without one), built eagerly with
  the module's variable store and TF1 semantics, as the runner needs it."""
  if scaffold_fn is None:
    return None
  return module.run_in_variable_store(scaffold_fn)


def saver_of(scaffold):
  """The Scaffold's own Saver, usable eagerly; None for the default."""
  saver = getattr(scaffold, 'saver', None) if scaffold is not None else None
  return tf1_semantics.eager_saver(saver)


def checkpoints_to_keep(scaffold, default):
  """How many training checkpoints Estimator keeps: the Scaffold's Saver's
  max_to_keep (its CheckpointSaverHook saves with it), else `default`
  (RunConfig.keep_checkpoint_max)."""
  saver = getattr(scaffold, 'saver', None) if scaffold is not None else None
  if isinstance(saver, tf.compat.v1.train.Saver):
    return tf1_semantics.saver_max_to_keep(saver)
  return default


def _is_distributed(variable):
  return isinstance(variable, tf.distribute.DistributedValues)


def _restore(saver, checkpoint_path):
  """saver.restore(None, checkpoint_path) eagerly, distributed variables
  included: a Saver over their first copies restores, the others follow."""
  var_list = tf1_semantics.saver_var_list(saver)
  distributed = []

  def first_copy(value):
    if isinstance(value, (list, tuple)):  # A partitioned variable's parts.
      return [first_copy(v) for v in value]
    if not _is_distributed(value):
      return value
    distributed.append(value)
    return value.values[0]

  if isinstance(var_list, dict):
    local = {name: first_copy(v) for name, v in var_list.items()}
  elif isinstance(var_list, (list, tuple)):
    local = first_copy(var_list)
  else:
    local = var_list
  if local is not None:  # Before anything is restored: does it fit?
    checkpoint_fit.check_var_list(local, checkpoint_path,
                                  reshape=tf1_semantics.saver_reshapes(saver))
  with tf1_semantics.graph_semantics():
    if distributed:
      saver = tf1_semantics.saver_like(saver, local)
    saver.restore(None, checkpoint_path)
  for variable in distributed:  # In cross-replica context: every copy.
    variable.assign(variable.values[0].read_value())


def load(scaffold, checkpoint_path, default_restore, global_step,
         checkpoint_inits=()):
  """Restores `checkpoint_path` through the Scaffold's saver (or
  default_restore(path)); without a checkpoint, applies `checkpoint_inits`
  (checkpoint_init.Recorder.take()), then runs init_op and init_fn.

  Returns 'restored', 'initialized' or None (nothing to do).
  """
  if checkpoint_path:
    saver = saver_of(scaffold)
    if saver is None:
      default_restore(checkpoint_path)
    else:
      _restore(saver, checkpoint_path)
      logging.info('Restored %s with the scaffold\'s Saver.', checkpoint_path)
    return 'restored'
  checkpoint_init.apply(checkpoint_inits)
  if scaffold is None:
    return 'initialized' if checkpoint_inits else None
  init_op = getattr(scaffold, 'init_op', None)
  if init_op is not None and not _ran_eagerly(init_op) and (
      not tf1_semantics.only_initializers(init_op)):
    raise ScaffoldError(
        'Scaffold.init_op was built inside the model_fn, where the tf2 '
        'runner cannot run it on its own: initialise with the variables\' '
        'initializers, tf.compat.v1.train.init_from_checkpoint, or a '
        'scaffold_fn (which the runner calls outside the step).')
  init_fn = getattr(scaffold, 'init_fn', None)
  if init_fn is not None:
    with tf1_semantics.traced_savers_restore_with(_restore):
      init_fn(hooks_lib.HostSession('Scaffold.init_fn', None, {},
                                    global_step))
    logging.info('Initialised variables with the scaffold\'s init_fn.')
  return 'initialized'


def _ran_eagerly(op):
  """Ops made eagerly (in a scaffold_fn) ran when they were made; graph ops
  (made in the traced model_fn) have a graph."""
  return getattr(op, 'graph', None) is None
