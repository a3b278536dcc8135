"""What a user observes of a run, as plain JSON values.

checkpoint(): variable names, dtypes, shapes and values of the latest
checkpoint, and the steps of the kept ones; events(): per events directory,
per summary tag, the (step, value) pairs (values of scalars only, none for
timing tags: steps/sec, queue fill fractions); export(): signature names,
inputs and outputs for a fixed input; plain(): numpy and bytes values as
JSON values.
"""

import collections
import os
import time

import numpy as np
import tensorflow as tf

_TIMING_TAGS = ('global_step/sec', 'examples/sec')


def plain(value):
  """value (numpy, bytes, dicts, lists) as JSON-able Python values."""
  if isinstance(value, dict):
    return {str(k): plain(v) for k, v in sorted(value.items())}
  if isinstance(value, (list, tuple)):
    return [plain(v) for v in value]
  if isinstance(value, bytes):
    return value.decode('utf-8', 'replace')
  if isinstance(value, (np.ndarray, np.generic)):
    if value.dtype.kind in 'SO':
      return plain(value.tolist())
    if value.dtype.kind == 'f':
      return np.asarray(value, np.float64).tolist()
    return value.tolist()
  return value


def checkpoint(model_dir):
  """{'variables': {name: [dtype, shape, values]}, 'steps': [kept steps]}."""
  path = tf.train.latest_checkpoint(model_dir)
  if path is None:
    return None
  reader = tf.train.load_checkpoint(path)
  dtypes = reader.get_variable_to_dtype_map()
  variables = {}
  for name, shape in sorted(tf.train.list_variables(path)):
    variables[name] = [dtypes[name].name, list(shape),
                       plain(reader.get_tensor(name))]
  state = tf.train.get_checkpoint_state(model_dir)
  steps = [int(p.rsplit('-', 1)[1]) for p in state.all_model_checkpoint_paths]
  return {'variables': variables, 'steps': steps,
          'latest': int(path.rsplit('-', 1)[1])}


def _scalar(value):
  if value.HasField('simple_value'):
    return float(value.simple_value)
  if value.HasField('tensor'):
    array = tf.make_ndarray(value.tensor)
    if array.shape == () and array.dtype.kind in 'fiu':
      return float(array)
    return f'tensor{list(array.shape)}'
  if value.HasField('histo'):
    return f'histo[{int(value.histo.num)}]'
  return value.WhichOneof('value')


def _values(path, racy_tags=(), patience_secs=5.0):
  """[(tag, [step, value]), ...] of an events file; None if it is truncated.

  A writer's background thread may still be appending its last record when
  the file is read: a truncated file is read again for up to patience_secs.
  """
  deadline = time.time() + patience_secs
  while True:
    values = []
    try:
      for event in tf.compat.v1.train.summary_iterator(path):
        for value in event.summary.value:
          timing = (value.tag in _TIMING_TAGS or 'fraction_' in value.tag
                    or value.tag in racy_tags)
          values.append((value.tag, [int(event.step),
                                     None if timing else _scalar(value)]))
      return values
    except tf.errors.DataLossError:
      if time.time() > deadline:
        return None
      time.sleep(0.2)


def events(model_dir, skip=('export',), racy_tags=()):
  """{relative dir: {tag: [[step, value], ...]}} of every events file;
  no value for racy_tags."""
  found = collections.defaultdict(lambda: collections.defaultdict(list))
  for root, dirs, files in os.walk(model_dir):
    dirs[:] = sorted(d for d in dirs if d not in skip)
    for name in sorted(files):
      if 'tfevents' not in name:
        continue
      rel = os.path.relpath(root, model_dir)
      values = _values(os.path.join(root, name), racy_tags)
      if values is None:  # Truncated, and it stayed so: a broken file.
        found[rel]['<truncated events file>'].append([-1, None])
        continue
      for tag, entry in values:
        found[rel][tag].append(entry)
  return {d: {t: sorted(v, key=lambda sv: (sv[0], str(sv[1])))
              for t, v in sorted(tags.items())}
          for d, tags in sorted(found.items())}


def export(path, feed):
  """{signature: {'inputs': [...], 'outputs': {key: value}}} for feed."""
  loaded = tf.saved_model.load(path)
  result = {}
  for name in sorted(loaded.signatures):
    fn = loaded.signatures[name]
    inputs = sorted(fn.structured_input_signature[1])
    args = {k: tf.constant(feed[k]) for k in inputs if k in feed}
    try:
      outputs = {k: plain(v.numpy()) for k, v in sorted(fn(**args).items())}
    except (TypeError, ValueError, tf.errors.OpError) as e:
      outputs = f'{type(e).__name__}'
    result[name] = {'inputs': inputs, 'outputs': outputs}
  return result
