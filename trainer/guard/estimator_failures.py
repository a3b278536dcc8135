"""Known failures of the Estimator API, each as one line naming the thing
at fault and the fix (entries of trainer/runtime/failures.py's registry):
feature columns and their inputs, heads and labels, vocabulary and data
files, a non-finite loss, writes the storage refuses, checkpoint restore.

Each entry is `(name, recognise)`, recognise(error, where) -> line or None;
`where.entry` ('launcher' or 'main') picks the knob a fix names (a
launcher program's Estimator argument, or trainer.main's flag).
"""

import collections.abc
import errno as errno_lib
import os
import re

from trainer.guard import failure_parts as parts


def _in_chain(error, pattern):
  """The first match of regex `pattern` in the messages of error's chain."""
  for link in parts.chain(error):
    found = re.search(pattern, parts.message(link))
    if found:
      return found
  return None


def _exporting(error):
  return parts.passed_through(error, 'export_saved_model',
                              'experimental_export_all_saved_models',
                              '_export_all_saved_models', 'export_savedmodel')


def _missing_feature(error, where):
  found = _in_chain(error, r'Feature (\S+?) is not in features dictionary')
  if not found or not parts.is_named(error, 'ValueError'):
    return None
  key = found.group(1)
  features = parts.frame_local(error, 'features', collections.abc.Mapping)
  have = (f' (it has {", ".join(sorted(map(str, features)))})'
          if features else '')
  source = ('serving_input_receiver_fn' if _exporting(error) else
            'input_fn' if where.entry == 'launcher' else '--input\'s input_fn')
  return (f'feature {key} is not among the features the {source} returns'
          f'{have}, but a feature column reads it: return a feature named '
          f'{key} from the {source}, or remove the column that reads it.')


def _label_range(error, where):
  head = _in_chain(error, r'Labels must be (<= n_classes - 1|>= 0)')
  sparse = _in_chain(error, r'Received a label value of (-?\d+) which is '
                     r'outside the valid range of \[0, (\d+)\)')
  checked = _in_chain(error, r'labels must be class ids 0\.\.(-?\d+) '
                      r'\(--num_classes=(\d+)\)')
  if checked:  # model_fn/losses.py's check of the built-in models.
    seen = re.search(r'\[x \([^)]*\) = \] \[([^\]]*)\]',
                     parts.message(error))
    shown = f'; labels seen: {seen.group(1)}' if seen else ''
    return (f'a label is outside 0..{checked.group(1)} (--num_classes='
            f'{checked.group(2)}{shown}): set --num_classes to the number of '
            'classes in the data, or fix the labels of the input.')
  if head:
    bound = re.search(r'\[y \([^)]*\) = \] \[(-?\d+)\]',
                      parts.message(error))
    n = int(bound.group(1)) + 1 if bound and head.group(1)[0] == '<' else None
    allowed = f'0..{n - 1}, as n_classes={n}' if n else '0..n_classes-1'
    return (f'a label is outside {allowed} (the head takes class ids): '
            'pass n_classes=<the number of classes> to the Estimator, '
            'label_vocabulary=[...] for string labels, or fix the labels the '
            'input_fn returns.')
  if sparse:
    value, n = int(sparse.group(1)), int(sparse.group(2))
    knob = ('--num_classes' if where.entry == 'main' else
            'the number of classes of the logits')
    return (f'a label is {value}, outside 0..{n - 1} ({n} classes; node '
            f'{parts.node(error)}): set {knob} to {value + 1} or more, or '
            'fix the labels the input_fn returns.')
  return None


def _string_labels(error, where):
  del where
  cast = _in_chain(error, r'Cast string to \w+ is not supported')
  head_node = (parts.node(error) or '').startswith('head/')
  typed = _in_chain(error, r'Labels dtype should be integer')
  if not ((cast and head_node) or typed):
    return None
  where_seen = f' (node {parts.node(error)})' if cast else ''
  return ('the labels are strings, but the head takes integer class ids'
          f'{where_seen}: pass label_vocabulary=[the label strings, in class '
          'order] to the Estimator, or return integer labels '
          '0..n_classes-1 from the input_fn.')


_NO_FILE = re.compile(r'^(\S+?); No such file or directory')


def _what_reads(node_name):
  node_name = node_name or ''
  if 'table_init' in node_name or 'InitializeTableFromTextFile' in node_name:
    return 'vocabulary file', (
        'a lookup table is built from it: categorical_column_with_'
        'vocabulary_file or a table from a file')
  if 'Iterator' in node_name or 'Dataset' in node_name:
    return 'data file', 'the input_fn\'s dataset reads it'
  return 'file', f'node {node_name} reads it' if node_name else 'it is read'


def _missing_file(error, where):
  del where
  if not parts.is_named(error, 'NotFoundError'):
    return None
  found = _NO_FILE.search(parts.summary(parts.message(error)))
  if not found:
    return None
  path = found.group(1)
  what, reader = _what_reads(parts.node(error))
  if os.path.islink(path) and not os.path.exists(path):
    return (f'{what} {path} is a symbolic link to {os.readlink(path)}, '
            'which does not exist: fix the link or remove it.')
  return (f'{what} {path} does not exist ({reader}): create it, or give '
          'the program the path of an existing file.')


def _nan_kept(error, step):
  """What the model_dir keeps after a NaN stopped training at `step`: the
  checkpoints Estimator saved after that step holding NaN, the newest one
  from before it."""
  model_dir = parts.noted(error, 'model_dir')
  if not model_dir or step is None or not parts.tensorflow_loaded():
    return ''
  from trainer.guard import nonfinite  # pylint: disable=g-import-not-at-top
  bad, good = nonfinite.saved_after(model_dir, step)
  good_name = os.path.basename(good) if good else None
  if not bad:
    return (f' The latest checkpoint, {good_name}, is from before it.'
            if good_name else ' No checkpoint was written.')
  names = ', '.join(os.path.basename(p) for p, _ in bad)
  resume = (f'to resume from {good_name}, the newest checkpoint from before '
            'it' if good_name else 'to start over')
  return (f' {names}, saved after that step, hold{"s" if len(bad) == 1 else ""}'
          f' NaN or Inf ({bad[0][1]}, ...): {resume}, move {names} (its '
          '.index and .data files) out of the model_dir.')


def _nan_loss(error, where):
  if parts.is_named(error, 'NanLossDuringTrainingError'):
    what = 'Loss is nan'
  else:
    found = _in_chain(error, r'Nan in summary histogram for: (\S+)')
    if not found:
      return None
    what = f'NaN in {found.group(1)} (its summary histogram)'
  step = parts.noted(error, 'step')
  said = _in_chain(error, r'(?:Loss is \S+|became NaN or Inf) at step (\d+)')
  if said:  # The facade's tf2 runner found it (guard/nonfinite.py).
    step = int(said.group(1))
  fix = ('Lower --learning_rate, add --warmup_steps or check the input.'
         if where.entry == 'main' else
         'Check the input_fn\'s features and labels for NaN or Inf, or lower '
         'the learning rate.')
  return (f'{what}{f" at step {step}" if step is not None else ""}: training '
          f'stopped. {fix}{_nan_kept(error, step)}')


def _refused_write(error, where):
  if not parts.tensorflow_loaded():
    return None
  from trainer.guard import storage  # pylint: disable=g-import-not-at-top
  cause = storage.refused_write(error)
  if cause is None:
    return None
  number, text = cause
  path = storage.refused_path(error, '?')
  said = f'{text} ({errno_lib.errorcode.get(number, number)})'
  if _exporting(error):
    knob = ('--export_dir' if where.entry == 'main' else
            'export_saved_model\'s export_dir_base (or the exporter\'s)')
    return (f'cannot write the export to {path}: {said}. Nothing was '
            'exported, and the checkpoints in model_dir are unchanged. '
            f'Give {knob} a directory on a writable file system with room, '
            'then run the same command again.')
  return (f'cannot write to {path}: {said}. Give the program a directory '
          'on a writable file system with room there, then run the same '
          'command again.')


def _checkpoint_restore(error, where):
  missing = _in_chain(error, r'Key (\S+) not found in checkpoint')
  shapes = _in_chain(error, r'Assign requires shapes of both tensors to '
                     r'match\. lhs shape= (\[.*?\]) rhs shape= (\[.*?\])')
  broken = _in_chain(error, r'(Unable to open table file .*|not an sstable.*|'
                     r'Checksum does not match.*|Read less bytes than '
                     r'requested.*)')
  if not (missing or shapes or (broken and parts.is_named(
      error, 'DataLossError', 'OutOfRangeError'))):
    return None
  path = parts.frame_local(error, 'save_path', str) or 'the checkpoint'
  anew = ('use a new --model_dir (or start from it with --init_checkpoint)'
          if where.entry == 'main' else
          'train it in a new model_dir, or start from that checkpoint with '
          'warm_start_from=tf.estimator.WarmStartSettings(...)')
  if missing:
    return (f'checkpoint {path} has no variable {missing.group(1)}, which '
            f'the model has: another model wrote it. To train this model, '
            f'{anew}.')
  if shapes:
    return (f'checkpoint {path} holds a variable of shape {shapes.group(2)} '
            f'where the model has {shapes.group(1)} (node '
            f'{parts.node(error)}): another model wrote it. To train this '
            f'model, {anew}.')
  return (f'checkpoint {path} cannot be read ({broken.group(1).strip()}): '
          'restore its files (.index, .data-*) from a copy, or move them out '
          'of the model_dir (the checkpoint before it is then the latest).')


ENTRIES = (
    ('missing-feature', _missing_feature),
    ('label-range', _label_range),
    ('string-labels', _string_labels),
    ('missing-file', _missing_file),
    ('nan-loss', _nan_loss),
    ('refused-write', _refused_write),
    ('checkpoint-restore', _checkpoint_restore),
)
