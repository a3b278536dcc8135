"""Before training resumes: model_dir points at its newest complete checkpoint.

What TF's Saver does on a local disk (measured with strace, TF 2.15): data
and index are written under MODEL.ckpt-N_temp/ (each to a .tempstate file,
then renamed); the data file is renamed to MODEL.ckpt-N.data-*; then
MODEL.ckpt-N.index is written IN PLACE (not atomic); only then is the
`checkpoint` state file replaced atomically (temp file + rename); old
checkpoints are deleted .meta, .index, .data in turn. Nothing is fsynced.
So a process killed during a save leaves the state pointing at the previous
complete checkpoint, and possibly a _temp directory, a truncated newer
.index, or the .data of a half-deleted old checkpoint. `recover` removes
those leftovers and makes sure the state names the newest checkpoint that
loads, so every checkpoint left in model_dir loads.
"""

import collections
import os
import re

from absl import logging
import tensorflow as tf

_CHECKPOINT_FILE = re.compile(
    r'^(?P<prefix>.+)\.(?:index|meta|data-\d{5}-of-(?P<shards>\d{5}))$')
_LEFTOVER = re.compile(r'(_temp|\.tmp[0-9a-f]{32})$')  # Saver's temp names.
_STEP = re.compile(r'-(\d+)$')


def _join(model_dir, name):
  return os.path.join(model_dir, name)


def _remove(path):
  if tf.io.gfile.isdir(path):
    tf.io.gfile.rmtree(path)
  else:
    tf.io.gfile.remove(path)


def is_complete(prefix, files):
  """True if checkpoint `prefix` has its index and every data shard and its
  index reads. `files`: the names in its directory belonging to it."""
  if os.path.basename(prefix) + '.index' not in files:
    return False
  shards = {m.group('shards') for m in map(_CHECKPOINT_FILE.match, files)
            if m and m.group('shards')}
  if len(shards) != 1:
    return False
  total = int(shards.pop())
  base = os.path.basename(prefix)
  if any(f'{base}.data-{i:05d}-of-{total:05d}' not in files
         for i in range(total)):
    return False
  try:
    tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
  except (tf.errors.OpError, ValueError, RuntimeError):
    return False
  return True


def _step(prefix):
  match = _STEP.search(prefix)
  return int(match.group(1)) if match else -1


def recover(model_dir, max_to_keep=None):
  """Cleans up after an interrupted save; returns the newest complete
  checkpoint (now the state's latest) or None. Call it holding the lock.

  When a complete checkpoint newer than the state's is adopted, the oldest
  recorded ones beyond `max_to_keep` are deleted, as the interrupted Saver
  would have done right after updating the state.
  """
  if not tf.io.gfile.isdir(model_dir):
    return None
  names = [n.rstrip('/') for n in tf.io.gfile.listdir(model_dir)]
  by_prefix = collections.defaultdict(set)
  for name in names:
    if _LEFTOVER.search(name):
      logging.warning('Removing %s, left by an interrupted write.', name)
      _remove(_join(model_dir, name))
      continue
    match = _CHECKPOINT_FILE.match(name)
    if match:
      by_prefix[match.group('prefix')].add(name)
  complete = []
  for prefix, files in sorted(by_prefix.items()):
    if is_complete(_join(model_dir, prefix), files):
      complete.append(prefix)
    else:
      logging.warning('Removing incomplete checkpoint %s (%s), left by an '
                      'interrupted save or deletion.', prefix,
                      ', '.join(sorted(files)))
      for name in files:
        _remove(_join(model_dir, name))
  if not complete:
    return None
  complete.sort(key=_step)
  newest = complete[-1]
  state = tf.train.get_checkpoint_state(model_dir)
  recorded = [os.path.basename(p) for p in
              (state.all_model_checkpoint_paths if state else [])]
  latest = os.path.basename(state.model_checkpoint_path) if state else None
  if latest != newest:
    logging.warning('Checkpoint state of %s named %s; resuming from the newest '
                    'complete checkpoint, %s.', model_dir, latest, newest)
    kept = [p for p in recorded if p in complete and p != newest] + [newest]
    if max_to_keep and len(kept) > max_to_keep:
      for prefix in kept[:-max_to_keep]:
        logging.info('Deleting %s beyond keep_checkpoint_max=%d.', prefix,
                     max_to_keep)
        for name in by_prefix[prefix]:
          _remove(_join(model_dir, name))
      kept = kept[-max_to_keep:]
    tf.compat.v1.train.update_checkpoint_state(
        model_dir, newest, all_model_checkpoint_paths=kept)
  return _join(model_dir, newest)
