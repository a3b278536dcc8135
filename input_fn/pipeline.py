"""The datasets the built-in input_fn builds, one class per input pipeline.

Three paths, chosen from the split's first record (record_probe.py):
  * raw images at the input shape, training, cached: batches gathered from
    the split decoded in memory (in_memory.py);
  * raw images at the input shape otherwise: records batched first, then
    parsed, decoded and pad_crop'ed a batch at a time (raw_batch.py);
  * anything else (JPEG/PNG, other sizes, inception_crop): example by
    example, then batched.

Every function handed to tf.data is traced without AutoGraph (tracing.py).
"""

from absl import logging
import tensorflow as tf

from input_fn import features as feature_lib
from input_fn import in_memory
from input_fn import preprocessing
from input_fn import raw_batch
from input_fn import record_probe
from input_fn import seeds
from input_fn import tracing
from model_fn import precision

CYCLE_LENGTH = 16
_AUTOTUNE = tf.data.AUTOTUNE


def parse_and_preprocess(record, training, params, seed=None):
  """(features, label) from one serialized example; `seed` for augmentation."""
  parsed = tf.io.parse_single_example(record, feature_lib.FEATURE_SPEC)
  image = preprocessing.decode(parsed, params['image_channels'])
  return _preprocess(image, parsed[feature_lib.LABEL], training, params, seed)


def _preprocess(image, label, training, params, seed=None):
  """(features, label) from a decoded uint8 image and its int64 label."""
  image = preprocessing.preprocess(image, training, params, seed)
  # In the compute dtype: bfloat16 halves host-to-device bytes.
  image = tf.cast(image, precision.compute_dtype(params))
  return {'image': image}, tf.cast(label, tf.int32)


def record_reader(params):
  """filename -> records; skips a corrupt record and the rest of its file
  when params['skip_corrupt_records']."""
  if not params['skip_corrupt_records']:
    return tf.data.TFRecordDataset  # TF's own: never converted.
  return tracing.as_written(
      lambda path: tf.data.TFRecordDataset(path).ignore_errors(
          log_warning=True))


# The augmentations the batch-at-a-time path of raw images implements.
VECTORISED_AUGMENTATIONS = ('none', 'pad_crop')


class Pipeline:
  """The dataset of one input_fn call: its files, its path, its seeds."""

  def __init__(self, params, training, files, num_pipelines, pipeline):
    self.params = params
    self.dtype = precision.compute_dtype(params)
    self.training = training
    self.files = files
    self.num_pipelines = num_pipelines
    self.pipeline = pipeline
    self.batch_size = params['batch_size']
    self.split = feature_lib.file_pattern(params['data_dir'], training)
    size = params['image_size']
    self.shape = (size, size, params['image_channels'])
    augmentation = params['augmentation']
    self.augment = training and augmentation != 'none'
    self.margin = (preprocessing.pad_crop_margin(size)
                   if training and augmentation == 'pad_crop' else 0)
    # Raw images already at the model's input shape decode and augment a
    # batch at a time with the augmentations that path implements; anything
    # else (JPEG/PNG, other sizes, any other augmentation) is decoded and
    # preprocessed example by example (preprocessing.py defines them all).
    self.vectorised = (augmentation in VECTORISED_AUGMENTATIONS and
                       record_probe.raw_shape(files) == self.shape)
    service = training and params['tf_data_service']
    # Order matters wherever a --seed must reproduce a run and wherever
    # evaluation and prediction must see each example once, in order:
    # everywhere but training with no seed or through the tf.data service.
    self.deterministic = not (training and (service or
                                            params['seed'] is None))

  def records(self, shuffle_seed=None):
    """Serialized examples of the files, files in a seeded order."""
    dataset = tf.data.Dataset.from_tensor_slices(self.files)
    if shuffle_seed is not None:
      dataset = dataset.shuffle(len(self.files), seed=shuffle_seed)
    return dataset.interleave(
        record_reader(self.params),
        cycle_length=min(CYCLE_LENGTH, len(self.files)),
        num_parallel_calls=_AUTOTUNE, deterministic=self.deterministic)

  def _map(self, dataset, fn):
    return dataset.map(tracing.as_written(fn), num_parallel_calls=_AUTOTUNE,
                       deterministic=self.deterministic)

  # -- raw images at the input shape: a batch at a time --------------------

  def _raw_images(self, encoded, step, seed, padded):
    """Model input from the raw bytes of a batch, pad_crop'ed when
    training with it (`padded`: the bytes are raw_batch.pad'ed already, as
    in the in-memory table)."""
    if not self.margin:
      return raw_batch.normalise(raw_batch.decode(encoded, self.shape),
                                 self.dtype)
    offsets = raw_batch.crop_offsets(
        tf.shape(encoded)[0], self.margin,
        seeds.stream_seed(seed, step, self.pipeline, self.num_pipelines))
    if padded:
      images = raw_batch.crop(encoded, offsets, self.shape, self.margin)
    else:
      images = raw_batch.crop_rows_padded(
          raw_batch.pad_rows(encoded, self.shape, self.margin), offsets,
          self.shape, self.margin)
    return raw_batch.normalise(images, self.dtype)

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
    return tf.TensorSpec(self.shape, self.dtype)

  def raw_eval(self):
    """One ordered pass, a batch of records parsed and decoded at once."""
    dataset = self.records().batch(
        self.batch_size, drop_remainder=self.params['mode'] != 'infer')
    return self._map(dataset, lambda r: self._raw_batch(r, 0, 0))

  def raw_train_cached(self, seed):
    """Endless batches gathered from the split decoded in memory."""
    table = in_memory.table(self.records(), self.shape, self.margin,
                            self.split)
    return in_memory.batches(
        table, self.batch_size, seed, self.pipeline, self.num_pipelines,
        lambda images, labels, step: (
            {'image': self._raw_images(images, step, seed, padded=True)},
            labels),
        self.deterministic)

  def raw_train_streamed(self, seed):
    """Endless batches of shuffled records, each batch decoded at once."""
    dataset = self.records(shuffle_seed=seed).shuffle(
        self.params['shuffle_buffer'], seed=seed).repeat()
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
                         drop_remainder=self.params['mode'] != 'infer')

  def per_example_train(self, seed, cache):
    """Endless batches, each example decoded and augmented alone with its
    own stateless seed; `cache` keeps the decoded images in memory."""
    dataset = self.records(shuffle_seed=seed)
    if cache:
      channels = self.params['image_channels']
      dataset = self._map(dataset, lambda r: _decode_record(r, channels))
      dataset = dataset.cache()
    dataset = dataset.shuffle(self.params['shuffle_buffer'],
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
      return self.per_example_train(seed, bool(self.params['cache']))
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
