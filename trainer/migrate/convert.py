"""An Estimator checkpoint (TF1 names) as the generated model's object-based
tf.train.Checkpoint: model variables, optimizer slots and non-slot
variables, moving averages and the step.

`plan(facts, checkpoint)` maps every checkpoint variable before anything is
written; a variable that maps to nothing, or a model variable the
checkpoint lacks, is an error naming it. `convert(...)` assigns the values
and writes OUT/checkpoint/ckpt-STEP; its mapping (TF1 name -> the new
checkpoint's key) goes into the report.
"""

import collections
import os

import numpy as np
import tensorflow as tf

from trainer.api import errors

_VALUE_SUFFIX = '/.ATTRIBUTES/VARIABLE_VALUE'


class CheckpointMappingError(errors.TrainerError, ValueError):
  """A checkpoint variable maps to nothing, or a model variable is missing."""


def plan(facts, checkpoint):
  """{checkpoint name: (role, detail)}: what each variable becomes."""
  reader = tf.train.load_checkpoint(checkpoint)
  shapes = reader.get_variable_to_shape_map()
  planned = {}
  for variable in facts.variables:
    planned[variable.name] = (variable.role, variable.name)
  missing = sorted(n for n, (role, _) in planned.items()
                   if n not in shapes and role in ('model', 'global_step'))
  if missing:
    raise CheckpointMappingError(
        f'checkpoint {checkpoint} lacks {len(missing)} variable(s) the '
        f'model_fn makes, e.g. {", ".join(missing[:5])}: it was written by '
        'another model or configuration (check the flags).')
  unmapped = sorted(n for n in shapes if n not in planned)
  if unmapped:
    raise CheckpointMappingError(
        f'checkpoint variable(s) {", ".join(unmapped[:5])}'
        f'{" ..." if len(unmapped) > 5 else ""} of {checkpoint} map to '
        'nothing the model_fn makes in TRAIN mode (with these flags); '
        'nothing was written. Pass the flags the model was trained with.')
  absent = sorted(n for n, (role, _) in planned.items() if n not in shapes)
  return planned, absent


def checkpoint_keys(root):
  """{id(variable): key} of every variable tf.train.Checkpoint(root) saves:
  its first path breadth-first, as the saver finds it, escaped as
  TensorFlow writes it."""
  view = tf.train.TrackableView(root)
  keys, pending, seen = {}, collections.deque([(root, [])]), {id(root)}
  while pending:
    obj, path = pending.popleft()
    if isinstance(obj, tf.Variable):
      keys.setdefault(id(obj), '/'.join(_escape(p) for p in path) +
                      _VALUE_SUFFIX)
    for name, child in view.children(obj).items():
      if id(child) not in seen:
        seen.add(id(child))
        pending.append((child, path + [name]))
  return keys


def _escape(name):
  return name.replace('.', '..').replace('/', '.S')


def _targets(model, facts):
  """{checkpoint name: variable of the generated model}."""
  by_name = model.variables_by_name()
  targets = {}
  for variable in facts.variables:
    if variable.role in ('model', 'global_step') and variable.name in by_name:
      targets[variable.name] = by_name[variable.name]
  optimizer = facts.optimizer
  if optimizer is not None:
    for name, slots in optimizer.slots.items():
      keras_slots = model.optimizer.slots(by_name[name])
      for slot, checkpoint_name in slots.items():
        if slot not in keras_slots:
          raise CheckpointMappingError(
              f'optimizer slot {checkpoint_name} ({optimizer.v1_class} slot '
              f'{slot!r}) has no counterpart in {optimizer.keras_class}.')
        targets[checkpoint_name] = keras_slots[slot]
    for attribute, checkpoint_name in optimizer.non_slots.items():
      non_slots = model.optimizer.non_slot_variables()
      if attribute not in non_slots:
        raise CheckpointMappingError(
            f'optimizer variable {checkpoint_name} has no counterpart in '
            f'{optimizer.keras_class}.')
      targets[checkpoint_name] = non_slots[attribute]
  if facts.ema is not None:
    averaged = model.averaged_variables()
    shadows = facts.ema.shadows
    names = {id(v): n for n, v in by_name.items()}
    for variable, average in zip(averaged, model.averages):
      targets[shadows[names[id(variable)]]] = average
  return targets


def convert(model, facts, checkpoint, out_dir):
  """Assigns the checkpoint's values to `model` (built), writes
  out_dir/checkpoint/ckpt-STEP; [(TF1 name, new key, shape)]."""
  reader = tf.train.load_checkpoint(checkpoint)
  shapes = reader.get_variable_to_shape_map()
  targets = _targets(model, facts)
  unmapped = sorted(set(shapes) - set(targets))
  if unmapped:
    raise CheckpointMappingError(
        f'checkpoint variable(s) {", ".join(unmapped[:5])} of {checkpoint} '
        'map to no variable of the generated model.')
  for name, variable in targets.items():
    if name not in shapes:
      continue  # Made by the model, absent from the checkpoint (planned).
    value = reader.get_tensor(name)
    if tuple(value.shape) != tuple(variable.shape):
      raise CheckpointMappingError(
          f'checkpoint variable {name} has shape {list(value.shape)}, the '
          f'model\'s {variable.shape.as_list()}.')
    variable.assign(value.astype(variable.dtype.as_numpy_dtype))
  step = int(reader.get_tensor('global_step'))
  if model.optimizer is not None:
    model.optimizer.iterations.assign(step)
  objects = {'model': model}
  if model.optimizer is not None:
    objects['optimizer'] = model.optimizer
  root = tf.train.Checkpoint(**objects)
  directory = os.path.join(out_dir, 'checkpoint')
  manager = tf.train.CheckpointManager(root, directory, max_to_keep=1)
  path = manager.save(checkpoint_number=step)
  keys = checkpoint_keys(root)
  mapping = [(name, keys.get(id(variable), '?'), list(variable.shape))
             for name, variable in sorted(targets.items()) if name in shapes]
  _check_written(path, mapping, reader)
  return path, mapping


def _check_written(path, mapping, reader):
  """The written checkpoint holds every converted value under its key."""
  written = tf.train.load_checkpoint(path)
  for name, key, _ in mapping:
    if not written.has_tensor(key) or not np.array_equal(
        written.get_tensor(key), reader.get_tensor(name).astype(
            written.get_tensor(key).dtype)):
      raise CheckpointMappingError(
          f'variable {name} is not in {path} under {key} with its '
          'checkpoint value.')
