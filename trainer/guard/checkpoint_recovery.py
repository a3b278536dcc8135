"""Before training resumes: model_dir points at its newest complete checkpoint.

What TF's Saver does on a local disk (measured with strace, TF 2.15): data
and index are written under MODEL.ckpt-N_temp/ (each to a .tempstate file,
then renamed); the data file is renamed to MODEL.ckpt-N.data-*; then
MODEL.ckpt-N.index is written IN PLACE (not atomic); only then is the
`checkpoint` state file replaced atomically (temp file + rename); old
checkpoints are deleted .meta, .index, .data in turn. Nothing is fsynced.
So a process killed during a save leaves the state pointing at the previous
complete checkpoint, and possibly a _temp directory, a truncated newer
.index, or the .data of a half-deleted old checkpoint; and a disk that lost
data (a full disk, a copy cut short) can leave a .data file shorter than
its index says, which TensorFlow opens and fails to read only mid-restore.

`recover` removes the temporary files, MOVES every incomplete checkpoint
(checkpoint_files.problem) into MODEL_DIR/corrupt-<time>/ (never deleting
one), and makes the state name the newest complete checkpoint, saying what
it did in one warning line; so every checkpoint left in model_dir loads.
"""

import os
import time

from absl import logging
import tensorflow as tf

from trainer.compat import checkpoint_state
from trainer.guard import checkpoint_files

QUARANTINE_PREFIX = 'corrupt-'


def _quarantine_dir(model_dir):
  base = os.path.join(model_dir, QUARANTINE_PREFIX +
                      time.strftime('%Y%m%d-%H%M%S'))
  path, n = base, 1
  while tf.io.gfile.exists(path):
    n += 1
    path = f'{base}-{n}'
  tf.io.gfile.makedirs(path)
  return path


def _move_aside(model_dir, broken, by_prefix):
  """Moves the files of the `broken` checkpoints ({prefix: why}) into a new
  quarantine directory; returns its path."""
  target = _quarantine_dir(model_dir)
  for prefix in broken:
    for name in sorted(by_prefix[prefix]):
      tf.io.gfile.rename(os.path.join(model_dir, name),
                         os.path.join(target, name))
  return target


def _state(model_dir):
  """(latest name or None, recorded names) of model_dir's state file."""
  state = tf.train.get_checkpoint_state(model_dir)
  if state is None:
    return None, []
  return (os.path.basename(state.model_checkpoint_path),
          [os.path.basename(p) for p in state.all_model_checkpoint_paths])


def _delete_beyond(model_dir, kept, max_to_keep, by_prefix):
  """The Saver's own policy: the oldest complete checkpoints beyond
  max_to_keep are deleted (it would have, right after updating the state);
  returns the ones kept."""
  if not max_to_keep or len(kept) <= max_to_keep:
    return kept
  for prefix in kept[:-max_to_keep]:
    logging.info('Deleting %s beyond keep_checkpoint_max=%d.', prefix,
                 max_to_keep)
    for name in by_prefix[prefix]:
      tf.io.gfile.remove(os.path.join(model_dir, name))
  return kept[-max_to_keep:]


def recover(model_dir, max_to_keep=None):
  """Cleans up after an interrupted or failed save; returns the newest
  complete checkpoint (now the state's latest) or None. Call it holding
  the lock.

  When a complete checkpoint newer than the state's is adopted, the oldest
  recorded ones beyond `max_to_keep` are deleted, as the interrupted Saver
  would have done right after updating the state.
  """
  if not tf.io.gfile.isdir(model_dir):
    return None
  removed = checkpoint_files.remove_temporary_files(model_dir)
  by_prefix = checkpoint_files.checkpoints_by_prefix(model_dir)
  broken = {}
  complete = []
  for prefix in sorted(by_prefix, key=checkpoint_files.step_of):
    why = checkpoint_files.problem(os.path.join(model_dir, prefix))
    if why is None:
      complete.append(prefix)
    else:
      broken[prefix] = why
  latest, recorded = _state(model_dir)
  newest = complete[-1] if complete else None
  said = []
  if removed:
    said.append(f'removed {", ".join(removed)}, left by an interrupted save')
  if not broken and latest == newest:
    if said:
      logging.warning('model_dir %s: %s.', model_dir, said[0])
    return newest and os.path.join(model_dir, newest)

  if broken:
    target = _move_aside(model_dir, broken, by_prefix)
    said.append('incomplete checkpoint%s %s moved aside to %s/' % (
        's' if len(broken) > 1 else '',
        '; '.join(f'{p} ({why})' for p, why in broken.items()), target))
  if latest is not None and latest != newest and latest not in broken:
    said.append(f'the checkpoint state named {latest}, which '
                f'{"is not there" if latest not in by_prefix else "is older"}')
  if newest is None:
    if tf.io.gfile.exists(os.path.join(model_dir, 'checkpoint')):
      target = target if broken else _quarantine_dir(model_dir)
      tf.io.gfile.rename(os.path.join(model_dir, 'checkpoint'),
                         os.path.join(target, 'checkpoint'))
    logging.warning('model_dir %s: %s; no complete checkpoint is left, so '
                    'training starts at step 0.', model_dir,
                    '; '.join(said))
    return None
  if latest != newest:
    kept = [p for p in recorded if p in complete and p != newest] + [newest]
    kept = _delete_beyond(model_dir, kept, max_to_keep, by_prefix)
    checkpoint_state.write(model_dir, os.path.join(model_dir, newest), [
        os.path.join(model_dir, p) for p in kept])
  logging.warning('model_dir %s: %s; resuming from the newest complete '
                  'checkpoint, %s.', model_dir, '; '.join(said), newest)
  return os.path.join(model_dir, newest)
