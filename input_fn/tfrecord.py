"""input_fn over TFRecord files of tf.train.Examples (see features.py)."""

import contextlib

from absl import logging
import tensorflow as tf

from input_fn import corrupt_records
from input_fn import features as feature_lib
from input_fn import preprocessing
from input_fn import sharding
from model_fn import precision

CYCLE_LENGTH = 16
_AUTOTUNE = tf.data.AUTOTUNE


def is_training(params):
  """True when the runner asked for the training split (params['mode'])."""
  return params['mode'] == 'train'


def list_files(params, training):
  """Sorted files of the split; ValueError naming the pattern if none."""
  data_dir = params['data_dir']
  if not data_dir:
    raise ValueError("params['data_dir'] (--data_dir) is not set.")
  pattern = feature_lib.file_pattern(data_dir, training)
  files = sorted(tf.io.gfile.glob(pattern))
  if not files:
    raise ValueError(f'--data_dir: no files match {pattern}.')
  return files


def parse_and_preprocess(record, training, params, seed=None):
  """(features, label) from one serialized example; `seed` for augmentation."""
  parsed = tf.io.parse_single_example(record, feature_lib.FEATURE_SPEC)
  image = preprocessing.decode(parsed, params['image_channels'])
  image = preprocessing.preprocess(image, training, params, seed)
  # In bfloat16 this halves host-to-device bytes.
  image = tf.cast(image, precision.compute_dtype(params))
  label = tf.cast(parsed[feature_lib.LABEL], tf.int32)
  return {'image': image}, label


def _record_reader(params):
  """filename -> records; skips a corrupt record and the rest of its file
  when params['skip_corrupt_records']."""
  if not params['skip_corrupt_records']:
    return tf.data.TFRecordDataset
  return lambda path: tf.data.TFRecordDataset(path).ignore_errors(
      log_warning=True)


def input_fn(params):
  """Batched (features, labels) dataset of this pipeline's shard of the split.

  params: batch_size (this pipeline's batch), mode (train|eval|infer),
  data_dir, image_size, image_channels, augmentation, cache, shuffle_buffer,
  seed, precision, skip_corrupt_records, context (optional). Training data
  is shuffled and repeats; batches have a static size (drop_remainder)
  except in prediction.
  """
  training = is_training(params)
  files = list_files(params, training)
  num_shards, index = sharding.input_shard(params)
  seed = params['seed']
  dataset = tf.data.Dataset.from_tensor_slices(files)
  if num_shards > 1:
    if len(files) < num_shards:
      raise ValueError(
          f'{len(files)} files under {params["data_dir"]} cannot be split '
          f'over {num_shards} input pipelines; write at least one file each.')
    dataset = dataset.shard(num_shards, index)
  if training:
    dataset = dataset.shuffle(len(files), seed=seed)
  dataset = dataset.interleave(
      _record_reader(params), cycle_length=min(CYCLE_LENGTH, len(files)),
      num_parallel_calls=_AUTOTUNE, deterministic=True)
  if params['cache']:
    dataset = dataset.cache()
  if training:
    dataset = dataset.shuffle(params['shuffle_buffer'], seed=seed)
    dataset = dataset.repeat()
  if training and params['augmentation'] != 'none':
    # One stateless seed per example: augmentation is reproducible for a
    # given --seed, whatever order the parallel map's threads run in.
    seeds = tf.data.Dataset.random(seed=seed).batch(2, drop_remainder=True)
    dataset = tf.data.Dataset.zip((dataset, seeds)).map(
        lambda record, example_seed: parse_and_preprocess(
            record, training, params, example_seed),
        num_parallel_calls=_AUTOTUNE, deterministic=True)
  else:
    dataset = dataset.map(
        lambda record: parse_and_preprocess(record, training, params),
        num_parallel_calls=_AUTOTUNE, deterministic=True)
  drop_remainder = params['mode'] != 'infer'
  dataset = dataset.batch(params['batch_size'], drop_remainder=drop_remainder)
  return dataset.prefetch(_AUTOTUNE)


def count_records(params, training=False):
  """Number of readable records in the split's files (reads them all).

  A corrupt file raises CorruptRecordError naming it, unless
  params['skip_corrupt_records'], where its records up to the corruption
  count.
  """
  files = list_files(params, training)
  scans = corrupt_records.scan_files(files)
  if any(s.error for s in scans) and not params['skip_corrupt_records']:
    raise corrupt_records.corrupt_file_error(files)
  return sum(s.records for s in scans)


def report_corrupt_records(params, training):
  """Scans the split once; logs and returns the corrupt records to skip."""
  files = list_files(params, training)
  scans = corrupt_records.scan_files(files)
  lines = corrupt_records.describe(scans)
  split = feature_lib.file_pattern(params['data_dir'], training)
  if lines:
    logging.warning('--skip_corrupt_records: skipping %d corrupt records in '
                    '%s (%d records readable):\n%s', len(lines), split,
                    sum(s.records for s in scans), '\n'.join(lines))
  else:
    logging.info('--skip_corrupt_records: no corrupt record in %s.', split)
  return len(lines)


@contextlib.contextmanager
def naming_corrupt_files(params, splits):
  """Turns a DataLossError raised inside into a CorruptRecordError naming the
  corrupt file(s) of `splits` (tuple of `training` values)."""
  try:
    yield
  except corrupt_records.CorruptRecordError:
    raise
  except tf.errors.DataLossError as e:
    if not splits:
      raise
    files = [f for training in splits for f in list_files(params, training)]
    raise corrupt_records.corrupt_file_error(files, e) from e
