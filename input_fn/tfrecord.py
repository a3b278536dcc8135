"""input_fn over TFRecord files of tf.train.Examples (see features.py)."""

import contextlib

from absl import logging
import tensorflow as tf

from input_fn import corrupt_records
from input_fn import data_service
from input_fn import features as feature_lib
from input_fn import in_memory
from input_fn import preprocessing
from input_fn import raw_batch
from input_fn import record_probe
from input_fn import seeds
from input_fn import sharding

CYCLE_LENGTH = 16
_AUTOTUNE = tf.data.AUTOTUNE


def is_training(params):
  """True when the runner asked for the training split (params['mode'])."""
  return params.get('mode', 'train') == 'train'


def list_files(params, training):
  """Sorted files of the split; ValueError naming the pattern if none."""
  data_dir = params.get('data_dir')
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
  return _preprocess(image, parsed[feature_lib.LABEL], training, params, seed)


def _preprocess(image, label, training, params, seed=None):
  """(features, label) from a decoded uint8 image and its int64 label."""
  image = preprocessing.preprocess(image, training, params, seed)
  if params.get('precision') == 'bfloat16':
    image = tf.cast(image, tf.bfloat16)  # Halves host-to-device bytes.
  return {'image': image}, tf.cast(label, tf.int32)


def _record_reader(params):
  """filename -> records; skips a corrupt record and the rest of its file
  when params['skip_corrupt_records']."""
  if not params.get('skip_corrupt_records'):
    return tf.data.TFRecordDataset
  return lambda path: tf.data.TFRecordDataset(path).ignore_errors(
      log_warning=True)


def shard_files(files, params, data_dir):
  """(files, num_pipelines, pipeline): this input pipeline's share of
  `files` (every num_pipelines-th, from params['context'])."""
  num_pipelines, pipeline = sharding.input_shard(params)
  if num_pipelines > 1 and len(files) < num_pipelines:
    raise ValueError(
        f'{len(files)} files under {data_dir} cannot be split over '
        f'{num_pipelines} input pipelines; write at least one file each.')
  return files[pipeline::num_pipelines], num_pipelines, pipeline


class _Pipeline:
  """What one input_fn call builds: its files, its path, its seeds."""

  def __init__(self, params, training, files, num_pipelines, pipeline):
    self.params = params
    self.training = training
    self.files = files
    self.num_pipelines = num_pipelines
    self.pipeline = pipeline
    self.batch_size = params['batch_size']
    self.split = feature_lib.file_pattern(params['data_dir'], training)
    size = params['image_size']
    self.shape = (size, size, params['image_channels'])
    augmentation = params.get('augmentation', 'none')
    self.augment = training and augmentation != 'none'
    self.margin = (preprocessing.pad_crop_margin(size)
                   if training and augmentation == 'pad_crop' else 0)
    # Raw images already at the model's input shape decode and augment a
    # batch at a time; anything else (JPEG/PNG, other sizes,
    # inception_crop) is decoded and preprocessed example by example.
    self.vectorised = (augmentation != 'inception_crop' and
                       record_probe.raw_shape(files) == self.shape)
    service = training and params.get('tf_data_service')
    # Order matters wherever a --seed must reproduce a run and wherever
    # evaluation and prediction must see each example once, in order:
    # everywhere but training with no seed or through the tf.data service.
    self.deterministic = not (training and (service or
                                            params.get('seed') is None))

  def records(self, shuffle_seed=None):
    """Serialized examples of the files, files in a seeded order."""
    dataset = tf.data.Dataset.from_tensor_slices(self.files)
    if shuffle_seed is not None:
      dataset = dataset.shuffle(len(self.files), seed=shuffle_seed)
    return dataset.interleave(
        _record_reader(self.params),
        cycle_length=min(CYCLE_LENGTH, len(self.files)),
        num_parallel_calls=_AUTOTUNE, deterministic=self.deterministic)

  def _map(self, dataset, fn):
    return dataset.map(fn, num_parallel_calls=_AUTOTUNE,
                       deterministic=self.deterministic)

  # -- raw images at the input shape: a batch at a time --------------------

  def _raw_images(self, encoded, step, seed, padded):
    """Model input from the raw bytes of a batch, pad_crop'ed when
    training with it (`padded`: the bytes are raw_batch.pad'ed already)."""
    if not self.margin:
      return raw_batch.normalise(raw_batch.decode(encoded, self.shape),
                                 self.params.get('precision'))
    if not padded:
      encoded = raw_batch.pad(encoded, self.shape, self.margin)
    offsets = raw_batch.crop_offsets(
        tf.shape(encoded)[0], self.margin,
        seeds.stream_seed(seed, step, self.pipeline, self.num_pipelines))
    return raw_batch.normalise(
        raw_batch.crop(encoded, offsets, self.shape, self.margin),
        self.params.get('precision'))

  def _raw_batch(self, records, step, seed):
    """(features, labels) of a batch of serialized records: vectorised when
    every record is raw at the input shape, else example by example."""
    parsed = raw_batch.parse(records)

    def vectorised():
      return self._raw_images(parsed[feature_lib.ENCODED], step, seed,
                              padded=False)

    def per_example():
      if not self.augment:
        return tf.map_fn(
            lambda r: parse_and_preprocess(r, self.training, self.params)[0][
                'image'], records, fn_output_signature=self._image_spec())
      example_seeds = tf.random.experimental.stateless_split(
          seeds.stream_seed(seed, step, self.pipeline, self.num_pipelines),
          num=tf.shape(records)[0])
      return tf.map_fn(
          lambda a: parse_and_preprocess(a[0], True, self.params, a[1])[0][
              'image'], (records, example_seeds),
          fn_output_signature=self._image_spec())

    images = tf.cond(raw_batch.uniform(parsed, self.shape), vectorised,
                     per_example)
    return {'image': images}, tf.cast(parsed[feature_lib.LABEL], tf.int32)

  def _image_spec(self):
    dtype = (tf.bfloat16 if self.params.get('precision') == 'bfloat16'
             else tf.float32)
    return tf.TensorSpec(self.shape, dtype)

  def raw_eval(self):
    """One ordered pass, a batch of records parsed and decoded at once."""
    dataset = self.records().batch(
        self.batch_size, drop_remainder=self.params.get('mode') != 'infer')
    return self._map(dataset, lambda r: self._raw_batch(r, 0, 0))

  def raw_train_cached(self, seed):
    """Endless batches gathered from the split decoded in memory."""
    table = in_memory.table(self.records(), self.shape, self.margin,
                            self.split)
    return in_memory.batches(
        table, self.batch_size, seed, self.pipeline,
        lambda images, labels, step: (
            {'image': self._raw_images(images, step, seed, padded=True)},
            labels),
        self.deterministic)

  def raw_train_streamed(self, seed):
    """Endless batches of shuffled records, each batch decoded at once."""
    dataset = self.records(shuffle_seed=seed).shuffle(
        self.params.get('shuffle_buffer', 10000), seed=seed).repeat()
    dataset = dataset.batch(self.batch_size, drop_remainder=True).enumerate()
    return self._map(dataset,
                     lambda step, records: self._raw_batch(records, step,
                                                           seed))

  # -- everything else: example by example ----------------------------------

  def per_example_eval(self):
    """One ordered pass, each example decoded and preprocessed alone."""
    dataset = self._map(self.records(), lambda r: parse_and_preprocess(
        r, False, self.params))
    return dataset.batch(self.batch_size,
                         drop_remainder=self.params.get('mode') != 'infer')

  def per_example_train(self, seed, cache):
    """Endless batches, each example decoded and augmented alone with its
    own stateless seed; `cache` keeps the decoded images in memory."""
    dataset = self.records(shuffle_seed=seed)
    if cache:
      channels = self.params['image_channels']
      dataset = self._map(dataset, lambda r: _decode_record(r, channels))
      dataset = dataset.cache()
    dataset = dataset.shuffle(self.params.get('shuffle_buffer', 10000),
                              seed=seed).repeat().enumerate()

    def preprocess(step, element):
      example_seed = seeds.stream_seed(seed, step, self.pipeline,
                                       self.num_pipelines)
      if not self.augment:
        example_seed = None
      if cache:
        return _preprocess(element[0], element[1], True, self.params,
                           example_seed)
      return parse_and_preprocess(element, True, self.params, example_seed)

    dataset = self._map(dataset, preprocess)
    return dataset.batch(self.batch_size, drop_remainder=True)

  # -- the dataset ------------------------------------------------------------

  def train(self, seed):
    """Endless training batches; seed: int64 scalar (int or tensor)."""
    if not self.vectorised:
      return self.per_example_train(seed, bool(self.params.get('cache')))
    cache, reason = in_memory.cache_decision(self.params, self.files)
    logging.info('input_fn: %s %s (%s).', self.split,
                 'cached in memory' if cache else 'streamed', reason)
    return self.raw_train_cached(seed) if cache else self.raw_train_streamed(
        seed)

  def evaluation(self):
    return self.raw_eval() if self.vectorised else self.per_example_eval()


def _decode_record(record, channels):
  """(uint8 image, int64 label) of one serialized example."""
  parsed = tf.io.parse_single_example(record, feature_lib.FEATURE_SPEC)
  return preprocessing.decode(parsed, channels), parsed[feature_lib.LABEL]


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
  service = training and params.get('tf_data_service')
  if service:
    data_service.check_address(service)
    num_pipelines, pipeline = 1, 0  # Hosts share one stream: no sharding.
  else:
    files, num_pipelines, pipeline = shard_files(files, params,
                                                 params['data_dir'])
  pipeline = _Pipeline(params, training, files, num_pipelines, pipeline)
  if not training:
    dataset = pipeline.evaluation()
  elif service or params.get('seed') is None:
    dataset = seeds.with_runtime_seed(pipeline.train)
  else:
    dataset = pipeline.train(params['seed'])
  if service:
    dataset = data_service.distribute(dataset, params)
  return dataset.prefetch(_AUTOTUNE)


def count_records(params, training=False):
  """Number of readable records in the split's files (reads them all).

  A corrupt file raises CorruptRecordError naming it, unless
  params['skip_corrupt_records'], where its records up to the corruption
  count.
  """
  files = list_files(params, training)
  scans = corrupt_records.scan_files(files)
  if any(s.error for s in scans) and not params.get('skip_corrupt_records'):
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
