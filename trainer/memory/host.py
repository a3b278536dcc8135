"""Host RAM of the training input pipeline: the host side of the budget.

The device side (footprint.py) is what one core's HBM must hold; this is
what one input pipeline (one per host under PER_HOST_V2 and the tf2
runner's distribute_datasets_from_function) holds in host RAM while it
feeds training, from the params and the split's records, the same way the
built-in input_fn decides (input_fn/pipeline.py):
  * records: their mean serialized size from the first SAMPLE_RECORDS of
    the first file; their count from the files' bytes (TFRecord framing is
    16 bytes a record), so nothing reads the whole split;
  * cache: raw images at the input shape, cached (--cache, or a small
    split): the decoded table of in_memory.py, N * ((H+2m)(W+2m)C + 2mC
    + 4) bytes, while it is built the serialized records too
    (`cache_build`);
    other formats with --cache: decoded uint8 images and int64 labels;
  * shuffle buffer: --shuffle_buffer elements (at most the split) of what
    is shuffled there: serialized records, or decoded examples when cached;
    the in-memory table needs none (a permutation of row numbers);
  * prefetched batches: PREFETCH_BATCHES model-input batches (float32 or
    bfloat16 images, int32 labels) of this pipeline's batch; tf.data's
    AUTOTUNE sets the real depth, so this is a floor.
Synthetic input holds one batch and its prefetch.
"""

import struct

import tensorflow as tf

from input_fn import in_memory
from input_fn import preprocessing
from input_fn import record_probe
from input_fn import tfrecord

SAMPLE_RECORDS = 256
TFRECORD_FRAMING = 16  # length (8) + its CRC (4) + the data's CRC (4).
PREFETCH_BATCHES = 2
_LABEL_BYTES = {'table': 4, 'decoded': 8, 'batch': 4}


def record_sizes(files, limit=SAMPLE_RECORDS):
  """(mean serialized record bytes, estimated record count) of `files`."""
  lengths = []
  for path in files:
    with tf.io.gfile.GFile(path, 'rb') as f:
      while len(lengths) < limit:
        header = f.read(12)
        if len(header) < 12:
          break
        length, = struct.unpack('<Q', header[:8])
        lengths.append(length)
        f.seek(length + 4, 1)
    if lengths:
      break
  if not lengths:
    raise ValueError(f'--data_dir: no readable record in {files[0]}.')
  mean = sum(lengths) / len(lengths)
  total = sum(tf.io.gfile.stat(path).length for path in files)
  return mean, int(round(total / (mean + TFRECORD_FRAMING)))


def _image_bytes(config, dtype_bytes=1, margin=0):
  size = config.image_size + 2 * margin
  return size * size * config.image_channels * dtype_bytes


def batch_bytes(config, batch):
  """Bytes of one model-input batch: images and int32 labels."""
  dtype_bytes = 2 if config.precision == 'bfloat16' else 4
  return batch * (_image_bytes(config, dtype_bytes) + _LABEL_BYTES['batch'])


def input_pipeline(config):
  """{component: bytes, ...} of one training input pipeline's host RAM.

  config: the run's trainer.config.Config (input, data_dir, image_size, image_channels,
  augmentation, cache, shuffle_buffer, precision, train_batch_size,
  num_cores). Keys: path, records, record_bytes, shuffle_buffer_bytes,
  cache_bytes, cache_build_bytes, prefetch_bytes, total_bytes.
  """
  batch = config.train_batch_size
  result = {'records': 0, 'record_bytes': 0, 'shuffle_buffer_bytes': 0,
            'cache_bytes': 0, 'cache_build_bytes': 0,
            'prefetch_bytes': PREFETCH_BATCHES * batch_bytes(config, batch)}
  if config.input == 'synthetic':
    result.update(path='synthetic', cache_bytes=batch_bytes(config, batch))
  elif config.input == 'tfrecord':
    result.update(_record_pipeline(config))
  else:
    result['path'] = f'{config.input} (user input_fn: prefetch only)'
  result['total_bytes'] = (result['shuffle_buffer_bytes'] +
                           result['cache_bytes'] + result['prefetch_bytes'])
  return result


def _record_pipeline(config):
  """The components of the built-in TFRecord input_fn's training path (the
  input_fn's modules get the params dict)."""
  params = dict(config.as_params(), mode='train')
  files = tfrecord.list_files(params, training=True)
  record_bytes, records = record_sizes(files)
  size = config.image_size
  shape = (size, size, config.image_channels)
  augmentation = config.augmentation
  margin = (preprocessing.pad_crop_margin(size)
            if augmentation == 'pad_crop' else 0)
  shuffled = min(config.shuffle_buffer, records)
  out = {'records': records, 'record_bytes': record_bytes}
  vectorised = (augmentation != 'inception_crop' and
                record_probe.raw_shape(files) == shape)
  if vectorised:
    cache, _ = in_memory.cache_decision(params, files)
    if cache:
      row = (_image_bytes(config, 1, margin) +  # raw_batch.pad's tail:
             2 * margin * config.image_channels)
      out.update(path='raw images, cached in memory',
                 cache_bytes=records * (row + _LABEL_BYTES['table']),
                 cache_build_bytes=records * record_bytes)
    else:
      out.update(path='raw images, streamed',
                 shuffle_buffer_bytes=shuffled * record_bytes)
    return out
  decoded = _image_bytes(config) + _LABEL_BYTES['decoded']
  if config.cache:
    out.update(path='example by example, decoded cache',
               cache_bytes=records * decoded,
               shuffle_buffer_bytes=shuffled * decoded)
  else:
    out.update(path='example by example',
               shuffle_buffer_bytes=shuffled * record_bytes)
  return out
