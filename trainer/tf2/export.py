"""SavedModel export of the tf2 runner: the PREDICT graph on encoded images.

The serving signature is the one both runners share (trainer/serving.py):
`serving_default` takes a batch of JPEG/PNG bytes, decoded and preprocessed
as in evaluation.
"""

import os
import time

import tensorflow as tf

from trainer import serving
from trainer.compat import estimator as estimator_compat
from trainer.tf2 import model_fn_adapter
from trainer.tf2 import name_checkpoints


def export_saved_model(model_fn, params, checkpoint, export_dir):
  """Writes EXPORT_DIR/TIMESTAMP with model_fn's variables from `checkpoint`.

  params: what the model_fn sees in PREDICT (batch_size None). Returns the
  SavedModel's path.
  """
  module = model_fn_adapter.ModelFnModule(model_fn)
  predict = estimator_compat.ModeKeys.PREDICT

  def serve(image_bytes):
    images = serving.serving_images(image_bytes, params)
    predictions = module({'image': images}, None, predict, params).predictions
    if not isinstance(predictions, dict):
      predictions = {'output': predictions}
    return predictions

  serve = tf.function(serve, autograph=False, input_signature=[
      tf.TensorSpec([None], tf.string, name=serving.SERVING_INPUT_KEY)])
  with module.creation_scope():
    serve.get_concrete_function()
  name_checkpoints.NameBasedCheckpoints(
      module.variables_by_name(), os.path.dirname(checkpoint), 1).restore(
          checkpoint)
  target = os.path.join(export_dir, str(int(time.time())))
  tf.saved_model.save(module, target, signatures={'serving_default': serve})
  return target
