"""A small raw training split held decoded in host memory, served as batches.

The records are read once and decoded into one table: a string tensor of
the images' raw bytes (already padded when training uses pad_crop) and the
labels. Every batch is then gathered from the table: example j of epoch e is
row RandomIndexShuffle(j, seed=(seed, pipeline, e)), a fresh permutation of
the whole split each epoch (no shuffle buffer), and batches run across epoch
boundaries as `repeat().batch()` does. Work per batch does not depend on the
split's size.

Memory, per input pipeline: the table holds N * (H + 2m) * (W + 2m) * C
bytes of pixels (m = pad_crop margin, 0 without it) plus 4 bytes a label;
while it is built, the serialized records are held as well.
"""

from absl import logging
import tensorflow as tf

from input_fn import features as feature_lib
from input_fn import raw_batch

# --cache unset: cache a split whose files total at most this many bytes.
AUTO_CACHE_BYTES = 256 << 20


def cache_decision(params, files):
  """(cache, reason): whether to hold this pipeline's `files` in memory.

  params['cache'] True or False decides; None (the default) caches when the
  files total at most AUTO_CACHE_BYTES (a raw image takes about as many
  bytes decoded as in its record).
  """
  cache = params.get('cache')
  if cache is not None:
    return bool(cache), f'--cache={bool(cache)}'
  total = 0
  for path in files:
    total += tf.io.gfile.stat(path).length
    if total > AUTO_CACHE_BYTES:
      return False, f'files exceed {AUTO_CACHE_BYTES >> 20} MiB (--cache unset)'
  return True, (f'{total / 2**20:.1f} MiB of files <= '
                f'{AUTO_CACHE_BYTES >> 20} MiB (--cache unset)')


def table(records, shape, margin, split):
  """One-element dataset: (raw image bytes [N] string, labels [N] int32).

  records: dataset of serialized examples, all raw images of `shape`
  (H, W, C); margin > 0 pads each image for raw_batch.crop. A record of
  another format or shape, or an empty split, fails with an error naming
  `split` and --cache.
  """
  height, width, channels = shape

  def build(serialized):
    parsed = raw_batch.parse(serialized)
    checks = [
        tf.debugging.assert_positive(
            tf.size(serialized),
            message=f'{split}: no records to train on'),
        tf.debugging.assert_equal(
            raw_batch.uniform(parsed, shape), True,
            message=f'{split}: the in-memory training table needs every '
            f'record to be a raw {height}x{width}x{channels} image like the '
            'first one; found another format or shape (use --nocache to '
            'decode each record on its own)'),
    ]
    with tf.control_dependencies(checks):
      images = tf.identity(parsed[feature_lib.ENCODED])
    if margin:
      images = raw_batch.pad(images, shape, margin)
    return images, tf.cast(parsed[feature_lib.LABEL], tf.int32)

  logging.info('input_fn: %s decoded once into host memory (%dx%dx%d raw '
               'images, pad %d).', split, height, width, channels, margin)
  return records.batch(tf.int64.max).map(build)


def batches(table_dataset, batch_size, seed, pipeline, make_batch,
            deterministic):
  """Endless dataset of make_batch(images, labels, step) over the table.

  images/labels are the table rows of batch `step` (0, 1, ...): the
  positions step * batch_size ... of the concatenated epochs, each epoch a
  permutation of the table drawn from (seed, pipeline, epoch). seed: int64
  scalar (int or tensor).
  """
  seed = tf.cast(seed, tf.int64)

  def serve(images, labels):
    n = tf.size(labels, out_type=tf.int64)

    def gather(step):
      position = step * batch_size + tf.range(batch_size, dtype=tf.int64)
      keys = tf.stack([tf.fill([batch_size], seed),
                       tf.fill([batch_size], tf.constant(pipeline, tf.int64)),
                       position // n], axis=1)
      rows = tf.raw_ops.RandomIndexShuffle(index=position % n, seed=keys,
                                           max_index=n - 1)
      return make_batch(tf.gather(images, rows), tf.gather(labels, rows), step)

    return tf.data.Dataset.range(tf.int64.max).map(
        gather, num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic)

  return table_dataset.flat_map(serve)
