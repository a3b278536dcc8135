"""host_call that writes training summaries from the host, once per step."""

import tensorflow as tf

LOSS_TAG = 'train/loss'
LEARNING_RATE_TAG = 'train/learning_rate'


def make_host_call(params, global_step, loss, learning_rate):
  """Returns (host_call_fn, tensors) for TPUEstimatorSpec, or None.

  Summaries go to params['model_dir']; without it there is nowhere to write.
  Tensors are reshaped to [1] because host_call concatenates along dim 0.
  """
  model_dir = params['model_dir']
  if not model_dir:
    return None
  max_queue = int(params['iterations_per_loop'])

  def host_call_fn(global_step, loss, learning_rate):
    step = global_step[0]
    writer = tf.summary.create_file_writer(model_dir, max_queue=max_queue)
    with writer.as_default(), tf.summary.record_if(True):
      tf.summary.scalar(LOSS_TAG, loss[0], step=step)
      tf.summary.scalar(LEARNING_RATE_TAG, learning_rate[0], step=step)
      return tf.compat.v1.summary.all_v2_summary_ops()

  tensors = [tf.reshape(tf.cast(global_step, tf.int64), [1]),
             tf.reshape(loss, [1]), tf.reshape(learning_rate, [1])]
  return host_call_fn, tensors
