"""Refuses a model_dir written by a different model configuration.

A model is identified by what it builds, not by how --model names it:
  * its variables' names, shapes and dtypes are checked against the
    checkpoint itself before every restore (trainer/guard/checkpoint_fit.py,
    every runner and mode), so the same model_fn named file.py:fn or
    package.module:fn resumes, and a changed one never trains;
  * the hyperparameters that change results (classes, image shape,
    optimizer, a built-in model's own sizes) are checked here, at start and
    before any graph, against MODEL_DIR/trainer_config.json, which the run
    that starts a model_dir writes (a model_dir with checkpoints but no
    record gets none: what wrote them is not known), so the message names
    the flag. Settings only one of the runs records (another built-in
    model's sizes; a model_fn module has none) are left to the checkpoint.
A run with other values is refused with the differences listed, before
anything is written, and told to use a new --model_dir (optionally starting
from the old weights with --init_checkpoint) or that run's values;
--overwrite_model_dir, which deletes that run, is named as the last,
destructive option. A matching run is always resumed, so a restarted job
never loses its progress.
"""

import json
import os

from absl import logging
import tensorflow as tf

from trainer.api import errors
from trainer.guard import lock

FINGERPRINT_FILE = 'trainer_config.json'
# Not `model`: how --model is spelled does not say what it builds.
_COMMON_KEYS = ('num_classes', 'image_size', 'image_channels', 'optimizer')


class ModelDirMismatchError(errors.TrainerError, ValueError):
  """model_dir holds a run of another model configuration."""


def fingerprint(config, model_keys=()):
  """The settings of a Config that decide the variables in a checkpoint, as
  a dict.

  model_keys: the model's own settings among them (a built-in model's
  fingerprint_keys, trainer/models/builtin.py; none for a model_fn module).
  """
  keys = _COMMON_KEYS + tuple(model_keys)
  return {key: getattr(config, key) for key in keys}


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


def _differences(stored, current):
  """['--key: stored there, current now'] of the keys both record."""
  return [f'--{k}: {stored[k]!r} there, {current[k]!r} now'
          for k in sorted(set(stored) & set(current))
          if stored[k] != current[k]]


def _mismatch_message(model_dir, diffs):
  return (
      f'--model_dir={model_dir} holds a run of another model configuration '
      f'({"; ".join(diffs)}; recorded in {_path(model_dir)}). Nothing was '
      'changed. To train this configuration, use a new --model_dir (add '
      f'--init_checkpoint={model_dir} to start from that run\'s weights, '
      'when every variable fits, e.g. after a change of optimizer only); to '
      'go on with that run, pass the values it was trained with. The last '
      'and destructive option, --overwrite_model_dir, deletes that run '
      '(checkpoints, summaries, exports) and starts over.')


def check(config, training, overwrite=False, model_keys=()):
  """Raises ModelDirMismatchError if config.model_dir (a Config's) was
  written by another configuration.

  model_keys: as fingerprint's.
  training: records this config in a model_dir without a record or a
  checkpoint (with `overwrite`, after deleting a mismatching run).
  Otherwise the directory is only checked.
  """
  model_dir = config.model_dir
  # Lists, not tuples.
  current = json.loads(json.dumps(fingerprint(config, model_keys)))
  stored = _read(model_dir)
  diffs = _differences(stored, current) if stored is not None else []
  if diffs:
    if not (training and overwrite):
      raise ModelDirMismatchError(_mismatch_message(model_dir, diffs))
    logging.warning('--overwrite_model_dir: deleting the run in %s of a '
                    'different configuration:\n%s', model_dir,
                    '\n'.join(diffs))
    _delete_run(model_dir)
    stored = None
  if training and stored is None:
    if tf.train.latest_checkpoint(model_dir):
      # Of an unknown configuration: recording this one could misname
      # them; the restore checks they fit the model.
      logging.warning('%s has checkpoints but no %s: each restore checks '
                      'they fit the model.', model_dir, FINGERPRINT_FILE)
      return
    _write(model_dir, current)
