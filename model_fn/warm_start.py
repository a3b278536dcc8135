"""scaffold_fn that warm-starts model variables from --init_checkpoint."""

import tensorflow as tf


def _checkpoint_path(path):
  if tf.io.gfile.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise ValueError(f'--init_checkpoint: no checkpoint in directory {path}.')
    return latest
  return path


def make_scaffold_fn(init_checkpoint, model_variables):
  """Returns a scaffold_fn restoring `model_variables` from the checkpoint.

  Every model variable must be in the checkpoint with the same shape;
  otherwise a ValueError lists the missing and mismatched variables, so a
  checkpoint of another model never half-initialises this one.
  """
  path = _checkpoint_path(init_checkpoint)
  try:
    shapes = tf.train.load_checkpoint(path).get_variable_to_shape_map()
  except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError) as e:
    raise ValueError(f'--init_checkpoint: cannot read {path}: {e}') from e
  assignment_map, missing, mismatched = {}, [], []
  for var in model_variables:
    name = var.name.split(':')[0]
    if name not in shapes:
      missing.append(name)
    elif list(shapes[name]) != var.shape.as_list():
      mismatched.append(f'{name}: model {var.shape.as_list()}, '
                        f'checkpoint {list(shapes[name])}')
    else:
      assignment_map[name] = name
  if missing or mismatched:
    details = [f'  missing {n}' for n in missing[:20]]
    details += [f'  shape {m}' for m in mismatched[:20]]
    raise ValueError(
        f'--init_checkpoint {path} does not match the model '
        f'({len(missing)} missing, {len(mismatched)} with other shapes):\n' +
        '\n'.join(details))

  def scaffold_fn():
    tf.compat.v1.train.init_from_checkpoint(path, assignment_map)
    return tf.compat.v1.train.Scaffold()

  return scaffold_fn
