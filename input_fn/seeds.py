"""Seeds of the input pipeline's random choices.

Every random choice of the built-in pipeline (file order, shuffle order,
augmentation) is drawn from a seed and a position in the stream, never from
the order in which parallel threads happen to finish, so a run is
reproducible for a --seed.
"""

import tensorflow as tf

from input_fn import tracing

_MAX_SEED = 2**62


def stream_seed(seed, step, pipeline, num_pipelines):
  """int64 [2] stateless seed of item `step` of input pipeline `pipeline`
  (of `num_pipelines`); distinct for every (step, pipeline)."""
  step = tf.cast(step, tf.int64)
  return tf.stack([tf.cast(seed, tf.int64),
                   step * num_pipelines + pipeline])


def with_runtime_seed(build):
  """Dataset build(seed) whose int64 seed is drawn when the pipeline starts
  running, where it runs: each tf.data service worker draws its own. The
  draw ignores graph-level seeds (its op seeds are 0), so it differs from
  run to run."""

  def draw(_):
    return tf.raw_ops.RandomUniformInt(
        shape=tf.constant([], tf.int32), minval=tf.constant(0, tf.int64),
        maxval=tf.constant(_MAX_SEED, tf.int64), seed=0, seed2=0)

  return tf.data.Dataset.from_tensors(0).map(
      tracing.as_written(draw)).flat_map(tracing.as_written(build))
