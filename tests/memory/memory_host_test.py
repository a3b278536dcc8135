"""trainer/memory/host.py against the bytes a materialised pipeline holds."""

import numpy as np
import tensorflow as tf

from input_fn import in_memory
from input_fn import pipeline as pipeline_lib
from input_fn import preprocessing
from input_fn import tfrecord
from tests import testutil
from trainer.memory import host


def _params(**overrides):
  return testutil.base_params(mode='train', extra={'batch_size': 32},
                              **overrides)


def _config(**overrides):
  """The Config host.py reads, of _params(**overrides)'s settings."""
  return testutil.base_config(mode='train', **overrides)


def _train_files(params):
  return tfrecord.list_files(params, training=True)


def _records(params):
  return pipeline_lib.Pipeline(params, True, _train_files(params), 1,
                               0).records()


def test_record_count_and_size_match_the_split():
  params = _params()
  sizes = [len(r.numpy()) for r in _records(params)]
  mean, count = host.record_sizes(_train_files(params))
  assert count == len(sizes) == tfrecord.count_records(params, True)
  assert abs(mean - np.mean(sizes)) <= 0.01 * np.mean(sizes)


def test_cache_is_the_in_memory_table():
  params = _params(cache=True, augmentation='pad_crop')
  estimate = host.input_pipeline(_config(cache=True, augmentation='pad_crop'))
  assert estimate['path'] == 'raw images, cached in memory'
  margin = preprocessing.pad_crop_margin(params['image_size'])
  shape = (params['image_size'], params['image_size'], 1)
  images, labels = next(iter(in_memory.table(
      _records(params), shape, margin, 'train')))
  held = sum(len(b) for b in images.numpy()) + labels.numpy().nbytes
  assert estimate['cache_bytes'] == held
  assert estimate['shuffle_buffer_bytes'] == 0


def test_streamed_shuffle_buffer_holds_that_many_records():
  params = _params(cache=False, shuffle_buffer=300)
  estimate = host.input_pipeline(_config(cache=False, shuffle_buffer=300))
  assert estimate['path'] == 'raw images, streamed'
  held = sum(len(r.numpy()) for r in _records(params).take(300))
  assert abs(estimate['shuffle_buffer_bytes'] - held) <= 0.01 * held


def test_decoded_cache_of_jpeg_records():
  params = _params(data_dir=testutil.DIGITS_JPEG, cache=True)
  estimate = host.input_pipeline(_config(data_dir=testutil.DIGITS_JPEG,
                                         cache=True))
  assert estimate['path'] == 'example by example, decoded cache'
  decoded = _records(params).map(
      lambda r: pipeline_lib._decode_record(r, 1))  # pylint: disable=protected-access
  held = sum(image.numpy().nbytes + label.numpy().nbytes
             for image, label in decoded)
  # The count comes from file bytes / mean record size (JPEGs vary).
  assert abs(estimate['cache_bytes'] - held) <= 0.05 * held


def test_prefetch_is_batches_of_model_input():
  params = _params(precision='bfloat16')
  features, labels = next(iter(tfrecord.input_fn(
      dict(params, batch_size=params['train_batch_size']))))
  one_batch = features['image'].numpy().nbytes + labels.numpy().nbytes
  assert features['image'].dtype == tf.bfloat16
  estimate = host.input_pipeline(_config(precision='bfloat16'))
  assert estimate['prefetch_bytes'] == (
      host.PREFETCH_BATCHES * one_batch)
