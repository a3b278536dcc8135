"""Writes a model_dir's `checkpoint` state file, as a Saver writes it.

tf.compat.v1.train.update_checkpoint_state does the same but logs a
deprecation notice (use CheckpointManager) on its first call; the recovery
of a model_dir rewrites the state of a TF1 Saver's checkpoints, which no
CheckpointManager owns, so it uses TensorFlow's own undeprecated writer
(atomic: a temporary file, then a rename).
"""

import tensorflow as tf


def write(model_dir, latest, all_paths):
  """Makes `latest` (a prefix in model_dir) the state's latest checkpoint
  and `all_paths` (oldest first, `latest` last) the recorded ones; paths
  are stored relative to model_dir, as the Estimator's Saver stores them."""
  tf.__internal__.train.update_checkpoint_state(
      model_dir, latest, all_model_checkpoint_paths=list(all_paths),
      save_relative_paths=True)
