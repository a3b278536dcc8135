"""Decoding and preprocessing of one image; shared by training and serving."""

import tensorflow as tf

from input_fn import features as feature_lib

EVAL_CENTRAL_FRACTION = 0.875


def decode(parsed, channels):
  """uint8 [H, W, channels] image from a parsed example's features."""
  encoded = parsed[feature_lib.ENCODED]
  image_format = parsed[feature_lib.FORMAT]

  def raw():
    stored = tf.cast(parsed[feature_lib.CHANNELS], tf.int32)
    check = tf.debugging.assert_equal(
        stored, channels,
        message=f'{feature_lib.CHANNELS} of a raw image differs from '
        f'image_channels={channels}')
    with tf.control_dependencies([check]):
      pixels = tf.io.decode_raw(encoded, tf.uint8)
    shape = tf.stack([tf.cast(parsed[feature_lib.HEIGHT], tf.int32),
                      tf.cast(parsed[feature_lib.WIDTH], tf.int32), channels])
    check_size = tf.debugging.assert_equal(
        tf.size(pixels), tf.reduce_prod(shape),
        message=f'{feature_lib.ENCODED} of a raw image does not hold '
        f'{feature_lib.HEIGHT} x {feature_lib.WIDTH} x {feature_lib.CHANNELS}'
        ' bytes')
    with tf.control_dependencies([check_size]):
      return tf.reshape(pixels, shape)

  def compressed():
    return decode_encoded(encoded, channels)

  return tf.cond(tf.equal(image_format, feature_lib.RAW), raw, compressed)


def decode_encoded(encoded, channels):
  """uint8 [H, W, channels] from JPEG, PNG, GIF or BMP bytes."""
  image = tf.io.decode_image(encoded, channels=channels,
                             expand_animations=False)
  image.set_shape([None, None, channels])
  return image


def pad_crop_margin(size):
  """Pixels pad_crop pads on each side of a size x size image: size/8."""
  return max(size // 8, 1)


def _pad_crop(image, size, seed):
  """Pads by pad_crop_margin on each side and crops back at a random offset."""
  pad = pad_crop_margin(size)
  image = tf.image.resize_with_crop_or_pad(image, size + 2 * pad,
                                           size + 2 * pad)
  return tf.image.stateless_random_crop(
      image, tf.stack([size, size, tf.shape(image)[-1]]), seed=seed)


def _inception_crop(image, seed):
  """Random area/aspect crop (Inception style) and a random left-right flip."""
  crop_seed, flip_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, num=2))
  bbox = tf.constant([0.0, 0.0, 1.0, 1.0], shape=[1, 1, 4])
  begin, crop_size, _ = tf.image.stateless_sample_distorted_bounding_box(
      tf.shape(image), bounding_boxes=bbox, seed=crop_seed,
      min_object_covered=0.1, aspect_ratio_range=(3. / 4., 4. / 3.),
      area_range=(0.08, 1.0), max_attempts=10,
      use_image_if_no_bounding_boxes=True)
  image = tf.slice(image, begin, crop_size)
  return tf.image.stateless_random_flip_left_right(image, seed=flip_seed)


def preprocess(image, is_training, params, seed=None):
  """float32 [size, size, C] in [-1, 1] from a uint8 image of any size.

  params: image_size, augmentation (none|pad_crop|inception_crop).
  `seed` (int [2]) drives the stateless augmentation ops, so a pipeline that
  hands each example its own seed augments identically on every run,
  whatever the thread order; training with augmentation requires it.
  Evaluation with inception_crop takes the central 87.5% first.
  """
  size = params['image_size']
  augmentation = params['augmentation']
  if is_training and augmentation != 'none' and seed is None:
    raise ValueError(f'augmentation={augmentation!r} needs a per-example '
                     'seed (see input_fn.tfrecord).')
  if is_training and augmentation == 'inception_crop':
    image = _inception_crop(image, seed)
  elif not is_training and augmentation == 'inception_crop':
    image = tf.image.central_crop(image, EVAL_CENTRAL_FRACTION)
  image = tf.image.resize(image, [size, size])  # float32
  if is_training and augmentation == 'pad_crop':
    image = _pad_crop(image, size, seed)
  image = tf.ensure_shape(image, [size, size, image.shape[-1]])
  return image / 127.5 - 1.0


def serving_preprocess(encoded, params):
  """Model input from encoded image bytes, exactly as evaluation sees it."""
  image = decode_encoded(encoded, params['image_channels'])
  return preprocess(image, is_training=False, params=params)
