"""Refuses a model_dir written by a different model configuration.

Training writes MODEL_DIR/trainer_config.json with the params that decide the
checkpoint's variables (model, their shapes, optimizer slots). A later run
with other values would fail deep inside a restore, or worse, mix runs; it
is refused with the differences listed, unless --overwrite_model_dir, which
then deletes the old run. A matching run is always resumed, so a restarted
job never loses its progress.
"""

import json
import os

from absl import logging
import tensorflow as tf

from trainer.api import errors
from trainer.guard import lock

FINGERPRINT_FILE = 'trainer_config.json'
_COMMON_KEYS = ('model', 'num_classes', 'image_size', 'image_channels',
                'optimizer')


class ModelDirMismatchError(errors.TrainerError, ValueError):
  """model_dir holds a run of another model configuration."""


def fingerprint(params, model_keys=()):
  """The params that decide the variables in a checkpoint, as a dict.

  model_keys: the model's own settings among them (a built-in model's
  fingerprint_keys, trainer/models/builtin.py; none for a model_fn module).
  """
  keys = _COMMON_KEYS + tuple(model_keys)
  return {key: params[key] for key in keys}


def _path(model_dir):
  return os.path.join(model_dir, FINGERPRINT_FILE)


def _read(model_dir):
  path = _path(model_dir)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return json.load(f)


def _write(model_dir, config):
  tf.io.gfile.makedirs(model_dir)
  tmp = _path(model_dir) + '.tmp'
  with tf.io.gfile.GFile(tmp, 'w') as f:
    json.dump(config, f, indent=1, sort_keys=True)
  tf.io.gfile.rename(tmp, _path(model_dir), overwrite=True)


def _delete_run(model_dir):
  """Deletes everything in model_dir but the lock file."""
  for name in tf.io.gfile.listdir(model_dir):
    name = name.rstrip('/')
    if name == lock.LOCK_FILE:
      continue
    path = os.path.join(model_dir, name)
    if tf.io.gfile.isdir(path):
      tf.io.gfile.rmtree(path)
    else:
      tf.io.gfile.remove(path)


def check(params, training, overwrite=False, model_keys=()):
  """Raises ModelDirMismatchError if model_dir was written by another config.

  model_keys: as fingerprint's.
  training: records this config in model_dir (and, with `overwrite`, deletes
  a mismatching run first). Otherwise the directory is only checked.
  """
  model_dir = params['model_dir']
  # Lists, not tuples.
  current = json.loads(json.dumps(fingerprint(params, model_keys)))
  stored = _read(model_dir)
  if stored is not None and stored != current:
    diffs = [f'  --{k}: {stored.get(k)!r} there, {current.get(k)!r} now'
             for k in sorted(set(stored) | set(current))
             if stored.get(k) != current.get(k)]
    if not (training and overwrite):
      raise ModelDirMismatchError(
          f'--model_dir={model_dir} holds a run of a different model '
          f'configuration ({_path(model_dir)}):\n' + '\n'.join(diffs) +
          '\nUse another --model_dir, or pass --overwrite_model_dir to delete '
          'that run and start over.')
    logging.warning('--overwrite_model_dir: deleting the run in %s of a '
                    'different configuration:\n%s', model_dir,
                    '\n'.join(diffs))
    _delete_run(model_dir)
    stored = None
  if training and stored is None:
    if tf.train.latest_checkpoint(model_dir):
      logging.warning('%s has checkpoints but no %s: assuming they match this '
                      'configuration.', model_dir, FINGERPRINT_FILE)
    _write(model_dir, current)
