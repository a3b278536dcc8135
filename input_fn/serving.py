"""The built-in serving signature of exported SavedModels: encoded images
in, decoded and preprocessed as the built-in inputs' evaluation images.

The front ends choose it as the default serving_input_receiver_fn
(trainer/runners/registry.py); the runtime and the engines know none."""

import tensorflow as tf

from input_fn import preprocessing

SERVING_INPUT_KEY = 'image_bytes'


def serving_images(encoded, params):
  """float32 model inputs from a [batch] string tensor of JPEG/PNG bytes."""
  return tf.map_fn(lambda e: preprocessing.serving_preprocess(e, params),
                   encoded, fn_output_signature=tf.float32)


def serving_input_receiver_fn_for(params):
  """A serving_input_receiver_fn taking a batch of JPEG/PNG bytes.

  Images are decoded and preprocessed exactly as in evaluation, so a served
  prediction equals the model's prediction on the same image file.
  """

  def serving_input_receiver_fn():
    encoded = tf.compat.v1.placeholder(tf.string, [None],
                                       name=SERVING_INPUT_KEY)
    images = serving_images(encoded, params)
    return tf.estimator.export.ServingInputReceiver(
        features={'image': images},
        receiver_tensors={SERVING_INPUT_KEY: encoded})

  return serving_input_receiver_fn
