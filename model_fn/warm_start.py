"""scaffold_fn that warm-starts model variables from --init_checkpoint."""

import tensorflow as tf

from model_fn import layers
from trainer.api import errors


class InitCheckpointError(errors.TrainerError, ValueError):
  """--init_checkpoint is unreadable or does not match the model."""


def _checkpoint_path(path):
  if tf.io.gfile.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise InitCheckpointError(
          f'--init_checkpoint: no checkpoint in directory {path}.')
    return latest
  return path


def make_scaffold_fn(init_checkpoint, model_variables):
  """Returns a scaffold_fn restoring `model_variables` from the checkpoint.

  Every model variable must be in the checkpoint with the same shape and
  dtype; otherwise InitCheckpointError lists the missing and mismatched
  variables, so a checkpoint of another model never half-initialises this
  one.
  """
  path = _checkpoint_path(init_checkpoint)
  try:
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
  except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as e:
    raise InitCheckpointError(
        f'--init_checkpoint: cannot read {path}: {e}') from e
  assignment_map, missing, mismatched = {}, [], []
  for var in model_variables:
    name = layers.variable_name(var)
    if name not in shapes:
      missing.append(name)
    elif list(shapes[name]) != var.shape.as_list():
      mismatched.append(f'{name}: model {var.shape.as_list()}, '
                        f'checkpoint {list(shapes[name])}')
    elif dtypes[name] != var.dtype.base_dtype:
      mismatched.append(f'{name}: model {var.dtype.base_dtype.name}, '
                        f'checkpoint {dtypes[name].name}')
    else:
      assignment_map[name] = name
  if missing or mismatched:
    details = [f'  missing {n}' for n in missing[:20]]
    details += [f'  mismatched {m}' for m in mismatched[:20]]
    if len(missing) > 20 or len(mismatched) > 20:
      details.append('  ...')
    raise InitCheckpointError(
        f'--init_checkpoint {path} does not match the model '
        f'({len(missing)} missing, {len(mismatched)} with another shape or '
        'dtype):\n' + '\n'.join(details))

  def scaffold_fn():
    tf.compat.v1.train.init_from_checkpoint(path, assignment_map)
    return tf.compat.v1.train.Scaffold()

  return scaffold_fn
