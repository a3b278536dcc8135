"""Regenerates the embedded data set in data/digits from scikit-learn's digits.

scikit-learn ships the UCI handwritten digits (1,797 8x8 images, 10 classes)
inside its wheel, so this runs offline. Images are upscaled to 28x28 grey
levels (the seeds' 784-input MLP) and split, stratified with a fixed seed,
into 1,437 training and 360 held-out examples, written twice:

  data/digits/raw   uint8 pixels (image/format=raw); the default --data_dir
  data/digits/jpeg  the same images as JPEG files, converted with
                    scripts/images_to_tfrecords.py (for ResNet on real files)

  python -m scripts.make_digits [--output_dir=data/digits]
"""

import os
import tempfile

from absl import app
from absl import flags
from absl import logging
import numpy as np
from PIL import Image
from sklearn import datasets
from sklearn import model_selection
import tensorflow as tf

from input_fn import features as feature_lib
from scripts import images_to_tfrecords

IMAGE_SIZE = 28
NUM_EVAL = 360
TRAIN_SHARDS = 4
EVAL_SHARDS = 2
SEED = 0
DEFAULT_OUTPUT_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'data',
    'digits')


def load_split():
  """(train_images, eval_images, train_labels, eval_labels); uint8 28x28."""
  digits = datasets.load_digits()
  images = [
      np.asarray(Image.fromarray(
          np.uint8(np.round(img * 255.0 / 16.0))).resize(
              (IMAGE_SIZE, IMAGE_SIZE), Image.BILINEAR))
      for img in digits.images
  ]
  images = np.stack(images).astype(np.uint8)
  return model_selection.train_test_split(
      images, digits.target, test_size=NUM_EVAL, stratify=digits.target,
      random_state=SEED)


def write_raw(images, labels, output_dir, split, num_shards):
  paths = images_to_tfrecords.shard_paths(output_dir, split, num_shards)
  tf.io.gfile.makedirs(output_dir)
  for shard, path in enumerate(paths):
    with tf.io.TFRecordWriter(path) as writer:
      for image, label in zip(images[shard::num_shards],
                              labels[shard::num_shards]):
        writer.write(feature_lib.make_example(
            image.tobytes(), feature_lib.RAW, int(label), IMAGE_SIZE,
            IMAGE_SIZE, 1))


def write_jpeg(images, labels, output_dir, split, num_shards):
  with tempfile.TemporaryDirectory() as folder:
    for i, (image, label) in enumerate(zip(images, labels)):
      class_dir = os.path.join(folder, str(label))
      os.makedirs(class_dir, exist_ok=True)
      Image.fromarray(image).save(os.path.join(class_dir, f'{i:05d}.png'))
    items, _ = images_to_tfrecords.list_images(
        folder, [str(c) for c in range(10)])
    images_to_tfrecords.write_tfrecords(items, output_dir, split, num_shards,
                                        seed=SEED)


def main(argv):
  del argv
  output_dir = flags.FLAGS.output_dir
  train_x, eval_x, train_y, eval_y = load_split()
  for fmt, writer in (('raw', write_raw), ('jpeg', write_jpeg)):
    directory = os.path.join(output_dir, fmt)
    writer(train_x, train_y, directory, 'train', TRAIN_SHARDS)
    writer(eval_x, eval_y, directory, 'validation', EVAL_SHARDS)
    logging.info('Wrote %d train and %d validation digits to %s.',
                 len(train_y), len(eval_y), directory)


if __name__ == '__main__':
  flags.DEFINE_string('output_dir', DEFAULT_OUTPUT_DIR, 'Output directory.')
  app.run(main)
