# A small CNN as Cloud-TPU-era teams wrote them (after tensorflow/tpu's
# mnist_tpu.py): tf.compat.v1.layers, dropout, batch normalisation, a
# TPUEstimatorSpec in TRAIN and EVAL, a plain EstimatorSpec with
# export_outputs in PREDICT, one input_fn per mode reading the TPUContext
# when TPUEstimator gives one. A test fixture for both runners: it is
# written the legacy way on purpose.
import glob
import os

import tensorflow.compat.v1 as tf
from tensorflow.compat.v1 import estimator as tf_estimator


def metric_fn(labels, logits):
  accuracy = tf.metrics.accuracy(
      labels=labels, predictions=tf.argmax(logits, axis=1))
  return {"accuracy": accuracy}


def model_fn(features, labels, mode, params):
  """model_fn constructs the ML model used to predict handwritten digits."""
  image = tf.reshape(features, [-1, 28, 28, 1]) / 255.
  training = mode == tf_estimator.ModeKeys.TRAIN
  y = tf.layers.Conv2D(filters=8, kernel_size=5, padding="same",
                       activation="relu")(image)
  y = tf.layers.MaxPooling2D(pool_size=(2, 2), strides=(2, 2),
                             padding="same")(y)
  y = tf.layers.batch_normalization(y, training=training)
  y = tf.layers.Flatten()(y)
  y = tf.layers.Dense(64, activation="relu")(y)
  y = tf.layers.Dropout(params.get("dropout", 0.4))(y, training=training)
  logits = tf.layers.Dense(10)(y)

  if mode == tf_estimator.ModeKeys.PREDICT:
    predictions = {
        "class_ids": tf.argmax(logits, axis=1),
        "probabilities": tf.nn.softmax(logits),
    }
    return tf_estimator.EstimatorSpec(
        mode, predictions=predictions,
        export_outputs={"classify": tf_estimator.export.PredictOutput(
            predictions)})

  loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)

  if mode == tf_estimator.ModeKeys.TRAIN:
    learning_rate = tf.train.exponential_decay(
        params.get("learning_rate", 0.05), tf.train.get_global_step(),
        decay_steps=100000, decay_rate=0.96)
    optimizer = tf.train.MomentumOptimizer(learning_rate, 0.9)
    if params["use_tpu"]:
      optimizer = tf.tpu.CrossShardOptimizer(optimizer)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
      train_op = optimizer.minimize(loss, tf.train.get_global_step())
    return tf_estimator.tpu.TPUEstimatorSpec(mode=mode, loss=loss,
                                             train_op=train_op)

  return tf_estimator.tpu.TPUEstimatorSpec(
      mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))


def _dataset(params, split):
  files = sorted(glob.glob(os.path.join(params["data_dir"], split + "-*")))
  if "context" in params:
    _, current_host, num_hosts, _ = (
        params["context"].current_input_fn_deployment())
  else:
    current_host, num_hosts = 0, 1
  files = files[current_host::num_hosts]

  def decode_record(record):
    example = tf.io.parse_single_example(record, {
        "image/encoded": tf.io.FixedLenFeature((), tf.string),
        "image/class/label": tf.io.FixedLenFeature((), tf.int64)})
    image = tf.cast(tf.decode_raw(example["image/encoded"], tf.uint8),
                    tf.float32)
    return tf.reshape(image, [784]), tf.cast(example["image/class/label"],
                                             tf.int32)

  return tf.data.TFRecordDataset(files).map(decode_record)


def train_input_fn(params):
  batch_size = params["batch_size"]
  return _dataset(params, "train").cache().repeat().shuffle(
      buffer_size=1000, seed=1).batch(batch_size, drop_remainder=True)


def eval_input_fn(params):
  return _dataset(params, "validation").batch(params["batch_size"],
                                              drop_remainder=True)


def predict_input_fn(params):
  return _dataset(params, "validation").map(
      lambda image, label: image).take(10).batch(params["batch_size"])


def serving_input_receiver_fn():
  serialized = tf.placeholder(tf.string, [None], name="examples")
  parsed = tf.io.parse_example(serialized, {
      "image/encoded": tf.io.FixedLenFeature((), tf.string)})
  images = tf.map_fn(
      lambda e: tf.cast(tf.decode_raw(e, tf.uint8), tf.float32),
      parsed["image/encoded"], dtype=tf.float32)
  return tf_estimator.export.TensorServingInputReceiver(
      features=images, receiver_tensors={"examples": serialized})
