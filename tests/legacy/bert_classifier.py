# After google-research/bert run_classifier.py: model_fn_builder and
# input_fn_builder closures, features-only datasets (labels inside the
# features dict), tf.trainable_variables() walked by name, an unseeded
# shuffle, dropout, init_from_checkpoint in a scaffold_fn on TPU. A test
# fixture for both runners: written the legacy way on purpose.
import collections
import re
import numpy as np
import tensorflow.compat.v1 as tf
from tests.legacy import bert_optimization as optimization

VOCAB = 50


def layer_norm(input_tensor, name=None):
  return tf.keras.layers.LayerNormalization(axis=-1, epsilon=1e-12, name=name or "LayerNorm")(input_tensor)


def create_model(is_training, input_ids, input_mask, labels, num_labels):
  with tf.variable_scope("bert"):
    with tf.variable_scope("embeddings"):
      table = tf.get_variable("word_embeddings", [VOCAB, 32],
                              initializer=tf.truncated_normal_initializer(stddev=0.02))
      out = tf.gather(table, input_ids)
      out = layer_norm(out)
      if is_training:
        out = tf.nn.dropout(out, rate=0.1)
    with tf.variable_scope("pooler"):
      first = tf.squeeze(out[:, 0:1, :], axis=1)
      pooled = tf.layers.dense(first, 32, activation=tf.tanh,
                               kernel_initializer=tf.truncated_normal_initializer(stddev=0.02))
  output_weights = tf.get_variable("output_weights", [num_labels, 32],
                                   initializer=tf.truncated_normal_initializer(stddev=0.02))
  output_bias = tf.get_variable("output_bias", [num_labels], initializer=tf.zeros_initializer())
  with tf.variable_scope("loss"):
    logits = tf.matmul(pooled, output_weights, transpose_b=True)
    logits = tf.nn.bias_add(logits, output_bias)
    probabilities = tf.nn.softmax(logits, axis=-1)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot_labels = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
    loss = tf.reduce_mean(per_example_loss)
    return (loss, per_example_loss, logits, probabilities)


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
  assignment_map = {}
  initialized_variable_names = {}
  name_to_variable = collections.OrderedDict()
  for var in tvars:
    name = var.name
    m = re.match("^(.*):\\d+$", name)
    if m is not None:
      name = m.group(1)
    name_to_variable[name] = var
  init_vars = tf.train.list_variables(init_checkpoint)
  assignment_map = collections.OrderedDict()
  for x in init_vars:
    (name, var) = (x[0], x[1])
    if name not in name_to_variable:
      continue
    assignment_map[name] = name
    initialized_variable_names[name] = 1
    initialized_variable_names[name + ":0"] = 1
  return (assignment_map, initialized_variable_names)


def model_fn_builder(num_labels, init_checkpoint, learning_rate, num_train_steps,
                     num_warmup_steps, use_tpu):
  def model_fn(features, labels, mode, params):
    tf.logging.info("*** Features ***")
    for name in sorted(features.keys()):
      tf.logging.info("  name = %s, shape = %s" % (name, features[name].shape))
    input_ids = features["input_ids"]
    input_mask = features["input_mask"]
    label_ids = features["label_ids"]
    is_training = (mode == tf.estimator.ModeKeys.TRAIN)
    (total_loss, per_example_loss, logits, probabilities) = create_model(
        is_training, input_ids, input_mask, label_ids, num_labels)
    tvars = tf.trainable_variables()
    initialized_variable_names = {}
    scaffold_fn = None
    if init_checkpoint:
      (assignment_map, initialized_variable_names
      ) = get_assignment_map_from_checkpoint(tvars, init_checkpoint)
      if use_tpu:
        def tpu_scaffold():
          tf.train.init_from_checkpoint(init_checkpoint, assignment_map)
          return tf.train.Scaffold()
        scaffold_fn = tpu_scaffold
      else:
        tf.train.init_from_checkpoint(init_checkpoint, assignment_map)
    tf.logging.info("**** Trainable Variables ****")
    for var in tvars:
      init_string = ""
      if var.name in initialized_variable_names:
        init_string = ", *INIT_FROM_CKPT*"
      tf.logging.info("  name = %s, shape = %s%s", var.name, var.shape, init_string)
    if mode == tf.estimator.ModeKeys.TRAIN:
      train_op = optimization.create_optimizer(
          total_loss, learning_rate, num_train_steps, num_warmup_steps, use_tpu)
      output_spec = tf.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss, train_op=train_op, scaffold_fn=scaffold_fn)
    elif mode == tf.estimator.ModeKeys.EVAL:
      def metric_fn(per_example_loss, label_ids, logits):
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
        accuracy = tf.metrics.accuracy(labels=label_ids, predictions=predictions)
        loss = tf.metrics.mean(values=per_example_loss)
        return {"eval_accuracy": accuracy, "eval_loss": loss}
      eval_metrics = (metric_fn, [per_example_loss, label_ids, logits])
      output_spec = tf.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss, eval_metrics=eval_metrics, scaffold_fn=scaffold_fn)
    else:
      output_spec = tf.estimator.tpu.TPUEstimatorSpec(
          mode=mode, predictions={"probabilities": probabilities}, scaffold_fn=scaffold_fn)
    return output_spec
  return model_fn


def input_fn_builder(is_training, seq_length, drop_remainder):
  rng = np.random.RandomState(0)
  n = 256
  ids = rng.randint(1, VOCAB, size=(n, seq_length)).astype(np.int32)
  label_ids = (ids[:, 0] > VOCAB // 2).astype(np.int32)
  def input_fn(params):
    batch_size = params["batch_size"]
    d = tf.data.Dataset.from_tensor_slices({
        "input_ids": tf.constant(ids, shape=[n, seq_length], dtype=tf.int32),
        "input_mask": tf.constant(np.ones_like(ids), shape=[n, seq_length], dtype=tf.int32),
        "label_ids": tf.constant(label_ids, shape=[n], dtype=tf.int32)})
    if is_training:
      d = d.repeat()
      d = d.shuffle(buffer_size=100)
    d = d.batch(batch_size=batch_size, drop_remainder=drop_remainder)
    return d
  return input_fn
