"""input_fn on the embedded TFRecords and on tiny files written here."""

import io

import numpy as np
from PIL import Image
import pytest
import tensorflow as tf

import flags

from input_fn import features as feature_lib
from input_fn import in_memory
from input_fn import pipeline
from input_fn import preprocessing
from input_fn import raw_batch
from input_fn import record_probe
from input_fn import synthetic
from input_fn import tfrecord
from tests import testutil


def _params(**overrides):
  extra = {'batch_size': overrides.pop('batch_size', 40)}
  for key in ('context',):
    if key in overrides:
      extra[key] = overrides.pop(key)
  return testutil.base_params(extra=extra, **overrides)


def _all_labels(dataset):
  return np.concatenate([labels.numpy() for _, labels in dataset])


def test_train_batches_are_static_and_normalised():
  dataset = tfrecord.input_fn(_params(mode='train', augmentation='pad_crop'))
  assert dataset.element_spec[0]['image'].shape.as_list() == [40, 28, 28, 1]
  assert dataset.element_spec[1].shape.as_list() == [40]
  features, labels = next(iter(dataset))
  images = features['image'].numpy()
  assert images.dtype == np.float32
  assert images.min() >= -1.0 and images.max() <= 1.0
  assert set(labels.numpy()) <= set(range(10))


@pytest.mark.parametrize('augmentation', ['pad_crop', 'inception_crop'])
def test_augmentation_is_reproducible_for_a_seed(augmentation):
  def first_batches(seed):
    dataset = tfrecord.input_fn(_params(mode='train', augmentation=augmentation,
                                        seed=seed, batch_size=64))
    return [f['image'].numpy() for f, _ in dataset.take(3)]

  runs = [first_batches(7), first_batches(7), first_batches(8)]
  for a, b in zip(runs[0], runs[1]):
    np.testing.assert_array_equal(a, b)
  assert any(np.any(a != c) for a, c in zip(runs[0], runs[2]))
  unaugmented = tfrecord.input_fn(_params(mode='train', augmentation='none',
                                          seed=7, batch_size=64))
  plain = next(iter(unaugmented))[0]['image'].numpy()
  assert np.any(plain != runs[0][0])  # The augmentation did something.


def test_training_repeats_past_one_epoch():
  dataset = tfrecord.input_fn(_params(mode='train', batch_size=500))
  assert len(list(dataset.take(4))) == 4  # 2,000 > 1,437 train records.


def test_eval_is_one_pass_dropping_the_partial_batch():
  dataset = tfrecord.input_fn(_params(mode='eval', batch_size=100))
  assert len(_all_labels(dataset)) == 300  # 360 examples, batches of 100.


def test_predict_keeps_every_example():
  dataset = tfrecord.input_fn(_params(mode='infer', batch_size=100))
  assert len(_all_labels(dataset)) == 360


def test_count_records():
  assert tfrecord.count_records(_params(), training=False) == 360
  assert tfrecord.count_records(_params(), training=True) == 1437


def test_input_pipelines_read_disjoint_shards():
  everything = sorted(_all_labels(tfrecord.input_fn(
      _params(mode='infer', batch_size=1))))
  shards = []
  for index in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2,
                                         input_pipeline_id=index,
                                         num_replicas_in_sync=2)
    shards.append(_all_labels(tfrecord.input_fn(
        _params(mode='infer', batch_size=1, context=context))))
  assert 0 < len(shards[0]) < 360 and 0 < len(shards[1]) < 360
  assert sorted(np.concatenate(shards)) == everything


class _FakeTPUContext:
  """What TPUEstimator's context answers under PER_HOST_V2."""

  def __init__(self, host, num_hosts):
    self._host, self._num_hosts = host, num_hosts

  def current_input_fn_deployment(self):
    # (host device, invocation index, invocation count, replicas fed).
    return ('/job:worker/task:0/device:CPU:0', self._host, self._num_hosts, 8)


def test_tpu_context_shards_by_host():
  sizes = [len(_all_labels(tfrecord.input_fn(_params(
      mode='infer', batch_size=1, context=_FakeTPUContext(h, 2)))))
           for h in range(2)]
  assert sum(sizes) == 360 and min(sizes) > 0


def test_bfloat16_images_from_the_pipeline():
  dataset = tfrecord.input_fn(_params(mode='eval', precision='bfloat16'))
  assert dataset.element_spec[0]['image'].dtype == tf.bfloat16


def test_jpeg_files_decode_to_the_same_digits():
  raw = tfrecord.input_fn(_params(mode='infer', batch_size=360))
  jpeg = tfrecord.input_fn(_params(mode='infer', batch_size=360,
                                   data_dir=testutil.DIGITS_JPEG))
  (raw_images, raw_labels), = list(raw)
  (jpeg_images, jpeg_labels), = list(jpeg)
  # Same examples in another order: each JPEG image's nearest raw image is
  # a few grey levels away (JPEG quality 95) and has the same label.
  a = raw_images['image'].numpy().reshape(360, -1)
  b = jpeg_images['image'].numpy().reshape(360, -1)
  distance = np.abs(b[:, None, :] - a[None, :, :]).mean(axis=-1)
  nearest = distance.argmin(axis=1)
  assert distance.min(axis=1).max() < 0.03
  np.testing.assert_array_equal(raw_labels.numpy()[nearest],
                                jpeg_labels.numpy())
  assert len(set(nearest)) == 360  # A one-to-one match.


def test_no_matching_files_names_the_pattern(tmp_path):
  with pytest.raises(ValueError, match=str(tmp_path) + '/train-'):
    tfrecord.input_fn(_params(mode='train', data_dir=str(tmp_path)))


def _write(path, examples):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for example in examples:
      writer.write(example)


def test_raw_image_with_wrong_channels_names_the_feature(tmp_path):
  pixels = np.zeros([28, 28, 3], np.uint8).tobytes()
  _write(tmp_path / 'validation-00000-of-00001',
         [feature_lib.make_example(pixels, b'raw', 1, 28, 28, 3)])
  dataset = tfrecord.input_fn(_params(mode='eval', batch_size=1,
                                      data_dir=str(tmp_path)))
  with pytest.raises(tf.errors.InvalidArgumentError, match='image/channels'):
    list(dataset)


def test_png_and_raw_records_decode_identically(tmp_path):
  image = np.random.RandomState(0).randint(0, 255, [28, 28, 1], np.uint8)
  buffer = io.BytesIO()
  Image.fromarray(image[:, :, 0]).save(buffer, format='PNG')
  _write(tmp_path / 'validation-00000-of-00001', [
      feature_lib.make_example(image.tobytes(), b'raw', 3, 28, 28, 1),
      feature_lib.make_example(buffer.getvalue(), b'png', 3, 28, 28, 1)])
  (features, labels), = list(tfrecord.input_fn(_params(
      mode='eval', batch_size=2, data_dir=str(tmp_path))))
  images = features['image'].numpy()
  np.testing.assert_array_equal(images[0], images[1])
  np.testing.assert_allclose(images[0], image / 127.5 - 1.0, atol=1e-6)
  assert list(labels.numpy()) == [3, 3]


def test_serving_preprocess_matches_eval_preprocess():
  image = np.random.RandomState(1).randint(0, 255, [40, 30, 1], np.uint8)
  buffer = io.BytesIO()
  Image.fromarray(image[:, :, 0]).save(buffer, format='PNG')
  params = _params()
  served = preprocessing.serving_preprocess(tf.constant(buffer.getvalue()),
                                            params)
  evaluated = preprocessing.preprocess(tf.constant(image), False, params)
  assert served.shape.as_list() == [28, 28, 1]
  np.testing.assert_allclose(served.numpy(), evaluated.numpy(), atol=1e-6)


def test_synthetic_input_shapes():
  dataset = synthetic.input_fn(_params(batch_size=4, image_size=8,
                                       image_channels=3))
  features, labels = next(iter(dataset))
  assert features['image'].shape.as_list() == [4, 8, 8, 3]
  assert labels.numpy().max() < 10


# -- raw splits: vectorised batches, the in-memory table, seeds ---------------


def _training_digits():
  """uint8 [N, 28, 28, 1] images and int labels of the raw training split."""
  dataset = tf.data.TFRecordDataset(sorted(tf.io.gfile.glob(
      testutil.DIGITS_RAW + '/train-*'))).map(
          lambda r: tf.io.parse_single_example(r, feature_lib.FEATURE_SPEC))
  images, labels = [], []
  for parsed in dataset:
    images.append(np.frombuffer(parsed[feature_lib.ENCODED].numpy(),
                                np.uint8).reshape(28, 28, 1))
    labels.append(int(parsed[feature_lib.LABEL]))
  return np.stack(images), np.array(labels)


def _as_pixels(images):
  """uint8 pixels of model input in [-1, 1] (exact for x / 127.5 - 1)."""
  return np.round((np.asarray(images, np.float32) + 1.0) * 127.5).astype(
      np.uint8)


def _crops_by_bytes(images, labels, margin):
  """{crop bytes: label} of every pad_crop crop of every image."""
  padded = np.pad(images, [[0, 0], [margin, margin], [margin, margin], [0, 0]])
  crops = {}
  for dy in range(2 * margin + 1):
    for dx in range(2 * margin + 1):
      window = padded[:, dy:dy + 28, dx:dx + 28]
      for crop, label in zip(window, labels):
        crops[crop.tobytes()] = label
  return crops


@pytest.mark.parametrize('cache', [None, False])  # in-memory table, streamed
def test_pad_crop_batches_are_crops_of_training_images(cache):
  images, labels = _training_digits()
  crops = _crops_by_bytes(images, labels, margin=3)
  dataset = tfrecord.input_fn(_params(mode='train', augmentation='pad_crop',
                                      batch_size=64, cache=cache, seed=3))
  shifted = 0
  for features, batch_labels in dataset.take(4):
    for image, label in zip(_as_pixels(features['image']),
                            batch_labels.numpy()):
      assert crops.get(image.tobytes()) == label
      shifted += image.tobytes() not in set(map(np.ndarray.tobytes, images))
  assert shifted > 64  # Most crops are off-centre.


def test_cached_epochs_are_permutations_of_the_split():
  images, _ = _training_digits()
  n = len(images)
  dataset = tfrecord.input_fn(_params(mode='train', augmentation='none',
                                      batch_size=100, seed=5))
  pixels = np.concatenate([_as_pixels(f['image'])
                           for f, _ in dataset.take(2 * n // 100 + 1)])
  expected = sorted(image.tobytes() for image in images)
  first, second = pixels[:n], pixels[n:2 * n]
  assert sorted(p.tobytes() for p in first) == expected
  assert sorted(p.tobytes() for p in second) == expected
  assert any(np.any(a != b) for a, b in zip(first, second))  # Reshuffled.


@pytest.mark.parametrize('augmentation,cache,data_dir', [
    ('pad_crop', None, testutil.DIGITS_RAW),   # in-memory table
    ('pad_crop', False, testutil.DIGITS_RAW),  # streamed, batch at a time
    ('pad_crop', True, testutil.DIGITS_JPEG),  # decoded JPEGs cached
])
def test_new_paths_are_reproducible_for_a_seed(augmentation, cache, data_dir):
  def first_batches(seed):
    dataset = tfrecord.input_fn(_params(
        mode='train', augmentation=augmentation, cache=cache, seed=seed,
        batch_size=64, data_dir=data_dir))
    return [(f['image'].numpy(), l.numpy()) for f, l in dataset.take(3)]

  a, b, c = first_batches(11), first_batches(11), first_batches(12)
  for (image_a, label_a), (image_b, label_b) in zip(a, b):
    np.testing.assert_array_equal(image_a, image_b)
    np.testing.assert_array_equal(label_a, label_b)
  assert any(np.any(x[0] != y[0]) for x, y in zip(a, c))


def test_no_seed_draws_a_new_stream_each_time():
  def first_batch():
    dataset = tfrecord.input_fn(_params(mode='train', augmentation='pad_crop',
                                        seed=None, batch_size=64))
    return next(iter(dataset))[0]['image'].numpy()

  assert np.any(first_batch() != first_batch())


def test_only_augmentations_the_raw_batch_path_implements_take_it():
  files = tfrecord.list_files(_params(), True)
  for augmentation in flags.AUGMENTATIONS:
    built = pipeline.Pipeline(
        _params(mode='train', augmentation=augmentation), True, files, 1, 0)
    assert built.vectorised == (
        augmentation in pipeline.VECTORISED_AUGMENTATIONS), augmentation
  built = pipeline.Pipeline(  # An augmentation added later: per example.
      _params(mode='train', augmentation='a_new_one'), True, files, 1, 0)
  assert not built.vectorised


def test_vectorised_eval_equals_per_example_preprocessing():
  (features, labels), = list(tfrecord.input_fn(
      _params(mode='infer', batch_size=360)))
  files = tfrecord.list_files(_params(), False)
  records = tf.data.Dataset.from_tensor_slices(files).interleave(
      tf.data.TFRecordDataset, cycle_length=len(files))  # The input order.
  expected = [tfrecord.parse_and_preprocess(r, False, _params())
              for r in records]
  np.testing.assert_array_equal(
      features['image'].numpy(), np.stack([e[0]['image'] for e in expected]))
  np.testing.assert_array_equal(labels.numpy(), [e[1] for e in expected])


def test_cached_training_shards_by_input_pipeline():
  first_epochs = []
  for index in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2,
                                         input_pipeline_id=index,
                                         num_replicas_in_sync=2)
    dataset = tfrecord.input_fn(_params(mode='train', augmentation='none',
                                        batch_size=1, context=context))
    size = len(tfrecord.shard_files(tfrecord.list_files(_params(), True),
                                    _params(context=context))[0])
    first_epochs.append({_as_pixels(f['image']).tobytes()
                         for f, _ in dataset.take(size * 700 // 1000)})
  assert not first_epochs[0] & first_epochs[1]


def test_bfloat16_training_batches_from_the_table():
  dataset = tfrecord.input_fn(_params(mode='train', augmentation='pad_crop',
                                      precision='bfloat16'))
  assert dataset.element_spec[0]['image'].dtype == tf.bfloat16
  assert next(iter(dataset))[0]['image'].shape == [40, 28, 28, 1]


def test_cache_rule():
  files = tfrecord.list_files(_params(), True)
  assert in_memory.cache_decision(_params(cache=True), files)[0]
  assert not in_memory.cache_decision(_params(cache=False), files)[0]
  cache, reason = in_memory.cache_decision(_params(cache=None), files)
  assert cache and 'MiB' in reason


def test_a_split_the_table_cannot_hold_names_nocache(tmp_path):
  image = np.zeros([28, 28, 1], np.uint8)
  buffer = io.BytesIO()
  Image.fromarray(image[:, :, 0]).save(buffer, format='PNG')
  _write(tmp_path / 'train-00000-of-00001', [
      feature_lib.make_example(image.tobytes(), b'raw', 1, 28, 28, 1),
      feature_lib.make_example(buffer.getvalue(), b'png', 2, 28, 28, 1)])
  dataset = tfrecord.input_fn(_params(mode='train', batch_size=2,
                                      data_dir=str(tmp_path)))
  with pytest.raises(tf.errors.InvalidArgumentError, match='--nocache'):
    next(iter(dataset))
  streamed = tfrecord.input_fn(_params(mode='train', batch_size=2, cache=False,
                                       data_dir=str(tmp_path)))
  assert sorted(next(iter(streamed))[1].numpy()) == [1, 2]


def test_record_probe():
  assert record_probe.raw_shape(tfrecord.list_files(_params(), True)) == (
      28, 28, 1)
  assert record_probe.raw_shape(tfrecord.list_files(
      _params(data_dir=testutil.DIGITS_JPEG), True)) is None


@pytest.mark.parametrize('channels', [1, 3])
def test_both_batch_crops_equal_numpy_pad_and_slice(channels):
  seed = 20261123
  print('seed', seed)
  rng = np.random.RandomState(seed)
  shape, margin = (5, 6, channels), 2
  images = rng.randint(1, 256, [25, *shape]).astype(np.uint8)
  offsets = np.array([[dy, dx] for dy in range(5) for dx in range(5)],
                     np.int32)  # Every offset of a margin-2 crop.
  padded = np.pad(images, [[0, 0], [margin, margin], [margin, margin],
                           [0, 0]])
  expected = np.stack([p[dy:dy + 5, dx:dx + 6]
                       for p, (dy, dx) in zip(padded, offsets)])
  encoded = tf.constant([image.tobytes() for image in images])
  full = raw_batch.crop(raw_batch.pad(encoded, shape, margin), offsets,
                        shape, margin)
  rows = raw_batch.crop_rows_padded(raw_batch.pad_rows(encoded, shape, margin),
                                    offsets, shape, margin)
  np.testing.assert_array_equal(full.numpy(), expected)
  np.testing.assert_array_equal(rows.numpy(), expected)
  np.testing.assert_array_equal(raw_batch.decode(encoded, shape).numpy(),
                                images)
