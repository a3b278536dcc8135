"""Converts a folder of labelled images into this project's TFRecord format.

Input layout (as ImageNet's train folder): INPUT_DIR/<class name>/<image>,
classes numbered 0..N-1 in sorted order of their names (or in the order of
--labels_file). Every image is stored JPEG-encoded under ImageNet-style keys
(see input_fn/features.py), sharded into OUTPUT_DIR/SPLIT-00000-of-0000N.

  python -m scripts.images_to_tfrecords --input_dir=photos/train \
      --output_dir=/tmp/data --split=train --num_shards=8
"""

import io
import os
import random

from absl import app
from absl import flags
from absl import logging
from PIL import Image
import tensorflow as tf

from input_fn import features as feature_lib

IMAGE_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.bmp', '.gif', '.webp')
JPEG_QUALITY = 95


def list_images(input_dir, class_names=None):
  """[(path, label)] and the class names, from INPUT_DIR/<class>/<image>."""
  if not tf.io.gfile.isdir(input_dir):
    raise ValueError(f'--input_dir {input_dir} is not a directory.')
  if class_names is None:
    class_names = sorted(d for d in tf.io.gfile.listdir(input_dir)
                         if tf.io.gfile.isdir(os.path.join(input_dir, d)))
    class_names = [d.rstrip('/') for d in class_names]
  if not class_names:
    raise ValueError(f'--input_dir {input_dir} has no class subdirectories.')
  items = []
  for label, name in enumerate(class_names):
    class_dir = os.path.join(input_dir, name)
    if not tf.io.gfile.isdir(class_dir):
      raise ValueError(f'class {name!r} has no directory {class_dir}.')
    for filename in sorted(tf.io.gfile.listdir(class_dir)):
      if filename.lower().endswith(IMAGE_EXTENSIONS):
        items.append((os.path.join(class_dir, filename), label))
  if not items:
    raise ValueError(f'--input_dir {input_dir}: no images with extensions '
                     f'{IMAGE_EXTENSIONS}.')
  return items, class_names


def encode_jpeg(path):
  """(JPEG bytes, height, width, channels) of the image file at `path`."""
  with tf.io.gfile.GFile(path, 'rb') as f:
    data = f.read()
  try:
    image = Image.open(io.BytesIO(data))
    image.load()
  except OSError as e:
    raise ValueError(f'cannot decode image {path}: {e}') from e
  if image.format == 'JPEG' and image.mode in ('L', 'RGB'):
    encoded = data
  else:
    image = image.convert('L' if image.mode in ('1', 'L', 'I', 'F') else 'RGB')
    buffer = io.BytesIO()
    image.save(buffer, format='JPEG', quality=JPEG_QUALITY)
    encoded = buffer.getvalue()
  channels = 1 if image.mode == 'L' else 3
  return encoded, image.height, image.width, channels


def shard_paths(output_dir, split, num_shards):
  return [os.path.join(output_dir, f'{split}-{i:05d}-of-{num_shards:05d}')
          for i in range(num_shards)]


def write_tfrecords(items, output_dir, split, num_shards, seed=0):
  """Writes `items` [(path, label)] shuffled into `num_shards` files.

  Each shard is written to a temporary name and renamed when complete, so an
  interrupted run leaves no file that looks finished. Returns the paths.
  """
  if num_shards < 1 or num_shards > len(items):
    raise ValueError(f'--num_shards must be in [1, {len(items)}], got '
                     f'{num_shards}.')
  items = list(items)
  random.Random(seed).shuffle(items)
  tf.io.gfile.makedirs(output_dir)
  paths = shard_paths(output_dir, split, num_shards)
  for shard, path in enumerate(paths):
    tmp = path + '.incomplete'
    with tf.io.TFRecordWriter(tmp) as writer:
      for image_path, label in items[shard::num_shards]:
        encoded, height, width, channels = encode_jpeg(image_path)
        writer.write(feature_lib.make_example(encoded, b'jpeg', label, height,
                                              width, channels))
    tf.io.gfile.rename(tmp, path, overwrite=True)
  return paths


def main(argv):
  del argv
  f = flags.FLAGS
  class_names = None
  if f.labels_file:
    with tf.io.gfile.GFile(f.labels_file) as fh:
      class_names = [line.strip() for line in fh if line.strip()]
  items, class_names = list_images(f.input_dir, class_names)
  paths = write_tfrecords(items, f.output_dir, f.split, f.num_shards, f.seed)
  labels_path = os.path.join(f.output_dir, 'labels.txt')
  with tf.io.gfile.GFile(labels_path, 'w') as fh:
    fh.write('\n'.join(class_names) + '\n')
  logging.info('Wrote %d images of %d classes to %d files in %s.', len(items),
               len(class_names), len(paths), f.output_dir)


if __name__ == '__main__':
  flags.DEFINE_string('input_dir', None, 'INPUT_DIR/<class>/<image files>.')
  flags.DEFINE_string('output_dir', None, 'Where the TFRecords go.')
  flags.DEFINE_enum('split', 'train', ('train', 'validation'),
                    'File name prefix; the trainer reads train-* and '
                    'validation-*.')
  flags.DEFINE_integer('num_shards', 8, 'Number of files.', lower_bound=1)
  flags.DEFINE_string('labels_file', None,
                      'Optional: class names, one per line, in label order.')
  flags.DEFINE_integer('seed', 0, 'Shuffle seed.')
  flags.mark_flags_as_required(['input_dir', 'output_dir'])
  app.run(main)
