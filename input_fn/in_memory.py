"""A small raw training split held decoded in host memory, served as batches.

The records are read once and decoded into one table: a string tensor of
the images' raw bytes (already padded when training uses pad_crop) and the
labels. Every batch is then gathered from the table, the rows of epoch e in
a fresh permutation of the whole split seeded by (seed, e, pipeline) (no
shuffle buffer), and batches run across epoch boundaries as
`repeat().batch()` does. Work per example does not depend on the split's
size (one shuffle of the N row numbers per epoch).

Memory, per input pipeline: the table holds N * (H + 2m) * (W + 2m) * C
bytes of pixels (m = pad_crop margin, 0 without it) plus 4 bytes a label;
while it is built, the serialized records are held as well.
"""

from absl import logging
import tensorflow as tf

from input_fn import features as feature_lib
from input_fn import raw_batch
from input_fn import seeds
from input_fn import tracing

# --cache unset: cache a split whose files total at most this many bytes.
AUTO_CACHE_BYTES = 256 << 20


def cache_decision(params, files):
  """(cache, reason): whether to hold this pipeline's `files` in memory.

  params['cache'] True or False decides; None (the default) caches when the
  files total at most AUTO_CACHE_BYTES (a raw image takes about as many
  bytes decoded as in its record).
  """
  cache = params['cache']
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
  return records.batch(tf.int64.max).map(tracing.as_written(build))


def batches(table_dataset, batch_size, seed, pipeline, num_pipelines,
            make_batch, deterministic):
  """Endless dataset of make_batch(images, labels, step) over the table.

  images/labels are the table rows of batch `step` (0, 1, ...): the next
  batch_size rows of the concatenated epochs, epoch e a permutation of the
  table drawn from seeds.stream_seed(seed, e, pipeline, num_pipelines).
  Drawing the row order is sequential and cheap (one shuffle per epoch);
  gathering and make_batch run in a parallel map. seed: int64 scalar (int or
  tensor).
  """

  def serve(images, labels):
    n = tf.size(labels, out_type=tf.int64)

    def next_rows(state, step):
      epoch, pending = state  # Rows drawn but not served yet, in order.

      def draw_epoch(epoch, pending):
        order = tf.random.experimental.stateless_shuffle(
            tf.range(n), seed=seeds.stream_seed(seed, epoch + 1, pipeline,
                                                num_pipelines))
        return epoch + 1, tf.concat([pending, order], 0)

      epoch, pending = tf.while_loop(
          lambda epoch, pending: tf.size(pending) < batch_size, draw_epoch,
          (epoch, pending), shape_invariants=(tf.TensorShape([]),
                                              tf.TensorShape([None])))
      rows = tf.ensure_shape(pending[:batch_size], [batch_size])
      return (epoch, pending[batch_size:]), (step, rows)

    start = (tf.constant(-1, tf.int64), tf.zeros([0], tf.int64))
    rows = tf.data.Dataset.range(tf.int64.max).scan(
        start, tracing.as_written(next_rows))
    return rows.map(
        tracing.as_written(lambda step, rows: make_batch(
            tf.gather(images, rows), tf.gather(labels, rows), step)),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)

  return table_dataset.flat_map(tracing.as_written(serve))
