"""input_fn over TFRecord files of tf.train.Examples (see features.py).

The split's files, this input pipeline's share of them, the dataset
(pipeline.py builds it) and the scans that name corrupt files.
"""

import contextlib

from absl import logging
import tensorflow as tf

from input_fn import corrupt_records
from input_fn import data_service
from input_fn import features as feature_lib
from input_fn import pipeline as pipeline_lib
from input_fn import record_framing
from input_fn import seeds
from input_fn import sharding

parse_and_preprocess = pipeline_lib.parse_and_preprocess


def is_training(params):
  """True when the runner asked for the training split (params['mode'])."""
  return params['mode'] == 'train'


def list_files(params, training):
  """Sorted files of the split; ValueError naming the pattern if none."""
  data_dir = params['data_dir']
  if not data_dir:
    raise ValueError("params['data_dir'] (--data_dir) is not set.")
  pattern = feature_lib.file_pattern(data_dir, training)
  try:
    files = sorted(tf.io.gfile.glob(pattern))
  except tf.errors.OpError as e:  # Remote storage out of reach.
    raise ValueError(
        f'--data_dir={data_dir}: cannot list {pattern}: '
        f'{e.message.splitlines()[0] if e.message else type(e).__name__}. '
        'Check the network and the credentials for this storage (for gs://: '
        'gcloud auth application-default login, or '
        'GOOGLE_APPLICATION_CREDENTIALS).') from e
  if not files:
    raise ValueError(f'--data_dir: no files match {pattern}.')
  for path in files:
    record_framing.check_target(path, what='--data_dir: file')
  return files


def check_not_cut(files, params):
  """TruncatedRecordError naming the local files among `files` that end
  inside a record (TF would silently drop the cut record and the rest),
  unless params['skip_corrupt_records'], where they are logged."""
  cuts = record_framing.find_cuts(files)
  if not cuts:
    return
  if not params['skip_corrupt_records']:
    raise corrupt_records.truncated_files_error(cuts)
  for cut in cuts:
    logging.warning('--skip_corrupt_records: %s; using the records before '
                    'the cut.', record_framing.describe(cut))


def shard_files(files, params):
  """(files, num_pipelines, index): this input pipeline's share of `files`
  (every num_pipelines-th from the index-th, per params['context'])."""
  num_pipelines, index = sharding.input_shard(params)
  if num_pipelines > 1 and len(files) < num_pipelines:
    raise ValueError(
        f'{len(files)} files under {params["data_dir"]} cannot be split '
        f'over {num_pipelines} input pipelines; write at least one file '
        'each.')
  return files[index::num_pipelines], num_pipelines, index


def input_fn(params):
  """Batched (features, labels) dataset of this pipeline's shard of the split.

  params: batch_size (this pipeline's batch), mode (train|eval|infer),
  data_dir, image_size, image_channels, augmentation, cache (None: decide
  by size), shuffle_buffer, seed, precision, skip_corrupt_records,
  tf_data_service, context (optional). Training data is shuffled and
  repeats; batches have a static size (drop_remainder) except in
  prediction; evaluation and prediction keep the files' order. Raw images
  at the input shape are decoded and augmented a batch at a time (and a
  small training split is decoded once into memory, see in_memory.py);
  other records one by one. The same seed gives the same batches.
  """
  training = is_training(params)
  files = list_files(params, training)
  check_not_cut(files, params)
  service = training and params['tf_data_service']
  if service:
    data_service.check_reachable(service)
    num_pipelines, index = 1, 0  # Hosts share one stream: no sharding.
  else:
    files, num_pipelines, index = shard_files(files, params)
  pipeline = pipeline_lib.Pipeline(params, training, files, num_pipelines,
                                   index)
  if not training:
    dataset = pipeline.evaluation()
  elif service or params['seed'] is None:
    dataset = seeds.with_runtime_seed(pipeline.train)
  else:
    dataset = pipeline.train(params['seed'])
  # Parallelism comes from the maps (AUTOTUNE), across batches or examples;
  # each op inside runs on one thread, which for these small tensors saves
  # intra-op thread hand-offs (measured: about +10-40% batches/s).
  options = tf.data.Options()
  options.threading.max_intra_op_parallelism = 1
  dataset = dataset.with_options(options)
  if service:
    dataset = data_service.distribute(dataset, params)
  return dataset.prefetch(tf.data.AUTOTUNE)


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
