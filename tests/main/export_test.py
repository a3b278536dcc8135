"""Export round trip: the SavedModel serves what the model predicts (under
the lane's default runner)."""

import io

import numpy as np
from PIL import Image
import tensorflow as tf

from input_fn import features as feature_lib
from input_fn import tfrecord
from model_fn import models
from tests import testutil
from trainer.runners import registry as runners
from input_fn import serving


def _copy_eval_records(params, count, data_dir):
  """Copies `count` eval records into one file in data_dir; returns them."""
  records = list(tf.data.TFRecordDataset(
      tfrecord.list_files(params, training=False)).take(count))
  tf.io.gfile.makedirs(data_dir)
  with tf.io.TFRecordWriter(f'{data_dir}/validation-00000-of-00001') as w:
    for record in records:
      w.write(record.numpy())
  return records


def _as_png(records):
  """PNG bytes of raw-format digit records."""
  pngs = []
  for record in records:
    parsed = tf.io.parse_single_example(record, feature_lib.FEATURE_SPEC)
    pixels = tf.io.decode_raw(parsed[feature_lib.ENCODED], tf.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels.numpy().reshape(28, 28)).save(buffer, format='PNG')
    pngs.append(buffer.getvalue())
  return pngs


def test_saved_model_matches_runner_predictions(tmp_path):
  params = testutil.base_config(model_dir=str(tmp_path / 'model'),
                                runner=testutil.DEFAULT_RUNNER)
  runner = runners.make_runner(params, models.mlp_model_fn, tfrecord.input_fn)
  runner.train(30)
  path = runner.export(str(tmp_path / 'export'))
  assert tf.saved_model.contains_saved_model(path)

  records = _copy_eval_records(params.as_params(), 50, str(tmp_path / 'data'))
  predictor = runners.make_runner(
      params.replace(data_dir=str(tmp_path / 'data')), models.mlp_model_fn,
      tfrecord.input_fn)
  expected = [p['probabilities'] for p in predictor.predict()]
  assert len(expected) == 50
  serve = tf.saved_model.load(path).signatures['serving_default']
  outputs = serve(**{serving.SERVING_INPUT_KEY: tf.constant(_as_png(records))})
  assert set(outputs) == {'classes', 'probabilities'}
  np.testing.assert_allclose(outputs['probabilities'].numpy(),
                             np.stack(expected), rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(outputs['classes'].numpy(),
                                np.stack(expected).argmax(axis=1))
