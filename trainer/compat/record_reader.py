"""What TensorFlow's TFRecord reader says about a whole file.

tf.compat.v1.io.tf_record_iterator reads records in Python in graph and
eager mode alike (tf.data needs a session in a TF1 program), but logs a
deprecation notice on its first use; it is called here with TensorFlow's
notices silenced.
"""

import tensorflow as tf
from tensorflow.python.util import deprecation  # pylint: disable=g-direct-tensorflow-import


def data_loss(path):
  """The DataLossError message reading TFRecord file `path` to its end
  gives ('corrupted record at N', 'truncated record at N'), or None."""
  try:
    with deprecation.silence():
      for _ in tf.compat.v1.io.tf_record_iterator(path):
        pass
  except tf.errors.DataLossError as e:
    return str(e)
  return None
