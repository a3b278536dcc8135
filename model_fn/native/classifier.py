"""Loss, training step and eval metrics of the native classifiers.

The math of model_fn.classifier without a model_fn: the loss is
model_fn.losses.cross_entropy (float32, label smoothing) plus the TF1 weight
decay term; one training step applies the gradients of the whole batch once.
"""

from model_fn import losses
from model_fn import metrics as tf1_metrics
from model_fn.native import optimization
import tensorflow as tf

IMAGE_KEY = 'image'


def images_of(features):
  """The image batch of an input_fn's features (a dict or the tensor)."""
  if isinstance(features, dict):
    if IMAGE_KEY not in features:
      raise ValueError(f'features has no {IMAGE_KEY!r} key; keys: '
                       f'{sorted(features)}.')
    return features[IMAGE_KEY]
  return features


def loss_and_logits(model, images, labels, params, training):
  """(float32 loss = cross-entropy + weight decay, float32 logits)."""
  logits = model(images, training=training)
  loss = losses.cross_entropy(labels, logits, logits.shape[-1],
                              params['label_smoothing'])
  return loss + optimization.weight_decay_loss(model, params), logits


def train_step(model, optimizer, images, labels, params):
  """One update from this replica's batch; returns its (unscaled) loss.

  With several replicas the loss is scaled by 1/replicas before the
  gradients, which the optimizer sums across replicas: the update is the
  mean over the global batch, as the TF1 runners compute it.
  """
  replicas = tf.distribute.get_strategy().num_replicas_in_sync
  variables = model.trainable_variables
  with tf.GradientTape() as tape:
    loss, _ = loss_and_logits(model, images, labels, params, training=True)
    scaled = loss / replicas if replicas > 1 else loss
  gradients = tape.gradient(scaled, variables)
  optimizer.apply_gradients(zip(gradients, variables))
  return loss


def correct_predictions(labels, logits):
  """{'top_1_accuracy': [batch] 0/1, and 'top_5_accuracy' with > 5 classes},
  computed as model_fn.metrics.classification_metric_fn does."""
  labels = tf.cast(labels, tf.int32)
  predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
  correct = {'top_1_accuracy': tf.cast(tf.equal(predictions, labels),
                                       tf.float32)}
  if logits.shape[-1] > tf1_metrics.TOP_K:
    correct['top_5_accuracy'] = tf.cast(
        tf.nn.in_top_k(predictions=logits, targets=labels,
                       k=tf1_metrics.TOP_K), tf.float32)
  return correct


def predictions(logits):
  """{'classes', 'probabilities'} of float32 logits, as the TF1 model_fn."""
  return {'classes': tf.argmax(logits, axis=-1, output_type=tf.int32),
          'probabilities': tf.nn.softmax(logits)}
