"""Data scripts: folder-of-images conversion and the embedded digits."""

import filecmp
import os

import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

from input_fn import tfrecord
from scripts import images_to_tfrecords
from scripts import make_digits
from tests import testutil


def _make_folder(root):
  """cats/ (3 red RGB PNGs), dogs/ (2 grey JPEGs), notes.txt ignored."""
  for name, count, mode, ext in (('cats', 3, 'RGB', 'png'),
                                 ('dogs', 2, 'L', 'jpg')):
    os.makedirs(root / name)
    for i in range(count):
      size = (20 + i, 16) if mode == 'RGB' else (12, 12)
      color = (200, 10, 10) if mode == 'RGB' else 90
      Image.new(mode, size, color).save(root / name / f'{i}.{ext}')
  (root / 'cats' / 'notes.txt').write_text('not an image')


def test_folder_converts_to_readable_jpeg_tfrecords(tmp_path):
  _make_folder(tmp_path / 'images')
  items, classes = images_to_tfrecords.list_images(str(tmp_path / 'images'))
  assert classes == ['cats', 'dogs']
  assert sorted(label for _, label in items) == [0, 0, 0, 1, 1]
  paths = images_to_tfrecords.write_tfrecords(
      items, str(tmp_path / 'out'), 'validation', num_shards=2)
  assert [os.path.basename(p) for p in paths] == [
      'validation-00000-of-00002', 'validation-00001-of-00002']
  assert not [p for p in os.listdir(tmp_path / 'out') if 'incomplete' in p]

  params = testutil.base_params(data_dir=str(tmp_path / 'out'), mode='eval',
                                image_size=8, image_channels=3,
                                extra={'batch_size': 5})
  (features, labels), = list(tfrecord.input_fn(params))
  images = features['image'].numpy()
  red = images[labels.numpy() == 0]
  grey = images[labels.numpy() == 1]
  assert red.shape == (3, 8, 8, 3) and grey.shape == (2, 8, 8, 3)
  assert (red[..., 0] > 0.4).all() and (red[..., 1] < -0.8).all()
  np.testing.assert_allclose(grey[..., 0], grey[..., 2], atol=0.02)


def test_missing_class_folder_is_named(tmp_path):
  _make_folder(tmp_path / 'images')
  with pytest.raises(ValueError, match='birds'):
    images_to_tfrecords.list_images(str(tmp_path / 'images'),
                                    ['cats', 'birds'])


def test_undecodable_image_is_named(tmp_path):
  _make_folder(tmp_path / 'images')
  (tmp_path / 'images' / 'dogs' / 'broken.jpg').write_bytes(b'not a jpeg')
  items, _ = images_to_tfrecords.list_images(str(tmp_path / 'images'))
  with pytest.raises(ValueError, match='broken.jpg'):
    images_to_tfrecords.write_tfrecords(items, str(tmp_path / 'out'),
                                        'train', num_shards=1)


def test_embedded_digits_regenerate_identically(tmp_path):
  train_x, eval_x, train_y, eval_y = make_digits.load_split()
  assert train_x.shape == (1437, 28, 28) and eval_x.shape == (360, 28, 28)
  out = str(tmp_path / 'raw')
  make_digits.write_raw(eval_x, eval_y, out, 'validation',
                        make_digits.EVAL_SHARDS)
  for name in sorted(os.listdir(out)):
    assert filecmp.cmp(os.path.join(out, name),
                       os.path.join(testutil.DIGITS_RAW, name), shallow=False)
