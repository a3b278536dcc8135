"""The global step a checkpoint holds, whichever runner wrote it, and the
object-based checkpoint of a native run: what it holds and where.

tf.train.Checkpoint(model=..., optimizer=..., global_step=...) saved by a
tf.train.CheckpointManager as MODEL_DIR/ckpt-STEP, the step being the
optimizer's `iterations`, also tracked at the root as `global_step` so that
its key (STEP_KEY) is the same whatever Keras names the optimizer's counter.
Shared by the native runner and the converter, so what the converter writes
is exactly what the runner restores.
"""

import tensorflow as tf

from trainer.api import errors

CHECKPOINT_PREFIX = 'ckpt'
# Key every object-based checkpoint has and no TF1 name-based one does.
OBJECT_GRAPH_KEY = '_CHECKPOINTABLE_OBJECT_GRAPH'
# The global step in a native checkpoint (a TF1 one has it as 'global_step').
STEP_KEY = 'global_step/.ATTRIBUTES/VARIABLE_VALUE'


class NativeCheckpointError(errors.TrainerError, ValueError):
  """model_dir's checkpoint cannot be restored into the native model."""


def make_checkpoint(model, optimizer):
  """The checkpoint root of a native run."""
  return tf.train.Checkpoint(model=model, optimizer=optimizer,
                             global_step=optimizer.iterations)


def make_manager(checkpoint, directory, max_to_keep, checkpoint_interval=None,
                 step_counter=None):
  """A CheckpointManager writing DIRECTORY/ckpt-STEP."""
  return tf.train.CheckpointManager(
      checkpoint, directory, max_to_keep=max_to_keep,
      checkpoint_name=CHECKPOINT_PREFIX, step_counter=step_counter,
      checkpoint_interval=checkpoint_interval)


def is_object_based(path):
  """True for a tf.train.Checkpoint prefix, False for a TF1 Saver one."""
  return OBJECT_GRAPH_KEY in tf.train.load_checkpoint(path) \
      .get_variable_to_shape_map()


def object_paths(root):
  """{variable ref: object path} of every variable a save of `root` writes.

  Paths are those of the checkpoint keys (model/dense1/kernel for the key
  model/dense1/kernel/.ATTRIBUTES/VARIABLE_VALUE): the first path of a
  breadth-first walk over tf.train.TrackableView children, the walk
  tf.train.Checkpoint makes when it saves.
  """
  view = tf.train.TrackableView(root)
  paths, seen = {}, {id(root)}
  queue = [(root, '')]
  while queue:
    node, path = queue.pop(0)
    for name, child in view.children(node).items():
      if id(child) in seen:
        continue
      seen.add(id(child))
      child_path = f'{path}/{name}' if path else name
      if isinstance(child, tf.Variable):
        paths[child.ref()] = child_path
      queue.append((child, child_path))
  return paths


def object_variables(root):
  """{checkpoint key: (shape, dtype)} of every variable a save of `root`
  writes (object_paths' variables, their keys as a save writes them)."""
  return {f'{path}/.ATTRIBUTES/VARIABLE_VALUE': (ref.deref().shape,
                                                 ref.deref().dtype)
          for ref, path in object_paths(root).items()}


def checkpoint_step(path):
  """The global step a checkpoint holds: a TF1 name-based one's
  `global_step` or a native object-based one's (trainer/runners/native)."""
  reader = tf.train.load_checkpoint(path)
  for key in ('global_step', STEP_KEY):
    if reader.has_tensor(key):
      return int(reader.get_tensor(key))
  raise ValueError(f'Checkpoint {path} holds no global step (neither '
                   f'global_step nor {STEP_KEY}).')


def latest_checkpoint_step(model_dir):
  """global_step of the latest checkpoint in model_dir; None without one."""
  path = tf.train.latest_checkpoint(model_dir)
  if path is None:
    return None
  return checkpoint_step(path)
