"""The entry point as users run it: python -m trainer.main FLAGS, under the
lane's default runner (Estimator where it exists, the tf2 runner elsewhere)."""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from input_fn import tfrecord
from tests import testutil


def _metrics(stdout):
  return {k: v for k, v in re.findall(r'^(\w+): (\S+)$', stdout, re.M)}


@pytest.fixture(scope='module')
def default_job(tmp_path_factory):
  """The default job (no flags but --model_dir), run once: (result, its
  model_dir), shared by the tests that need a trained model."""
  model_dir = str(tmp_path_factory.mktemp('default_job') / 'model')
  return testutil.run_main([f'--model_dir={model_dir}']), model_dir


def test_default_main_job_reaches_the_readmes_accuracy(default_job):
  result, _ = default_job
  assert result.returncode == 0, result.stderr[-3000:]
  metrics = _metrics(result.stdout)
  low, high = testutil.stated_accuracy_range()
  assert low <= float(metrics['top_1_accuracy']) <= high, result.stdout
  assert int(metrics['global_step']) == 3000
  assert re.search(r'train \| step: \d+ \| steps/sec: [\d.]+ \| '
                   r'examples/sec: [\d.]+ \| loss: [\d.]+ \| eta: ',
                   result.stderr)
  assert 'eval | step: 3000 | ' in result.stderr


def test_predict_and_export_modes(default_job):
  trained, model_dir = default_job
  assert trained.returncode == 0, trained.stderr[-3000:]
  common = [f'--model_dir={model_dir}']
  predict = testutil.run_main(common + ['--mode=predict'])
  assert predict.returncode == 0, predict.stderr[-3000:]
  with open(os.path.join(model_dir, 'predictions.jsonl')) as f:
    rows = [json.loads(line) for line in f]
  assert len(rows) == 360
  assert set(rows[0]) == {'classes', 'probabilities'}
  assert abs(sum(rows[0]['probabilities']) - 1.0) < 1e-4
  # Rows follow the input_fn's order of the eval split (its files
  # interleaved): the labels in that order.
  labels = np.concatenate([batch[1].numpy() for batch in tfrecord.input_fn(
      testutil.base_params(mode='infer', extra={'batch_size': 120}))])
  right = sum(int(row['classes']) == label for row, label in zip(rows, labels))
  assert right / len(rows) >= 0.97  # The trained model's, in file order.

  export = testutil.run_main(common + ['--mode=export'])
  assert export.returncode == 0, export.stderr[-3000:]
  export_path = _metrics(export.stdout)['export_path']
  assert os.path.isfile(os.path.join(export_path, 'saved_model.pb'))


def test_resnet18_digits_config_runs_on_jpeg_files(tmp_path):
  result = testutil.run_main([
      # The config's model and input pipeline, on 2 steps of 16 images.
      '--flagfile=configs/resnet18_digits.cfg', '--train_steps=2',
      '--steps_per_eval=2', '--iterations_per_loop=2', '--warmup_steps=0',
      '--train_batch_size=16', '--eval_batch_size=16', '--eval_steps=1',
      f'--model_dir={tmp_path}'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'top_1_accuracy' in _metrics(result.stdout)
  reader = tf.train.load_checkpoint(str(tmp_path))
  assert reader.get_tensor('global_step') == 2
  assert reader.get_variable_to_shape_map()[
      'resnet18/stage4/unit2/conv2/conv/kernel'] == [3, 3, 512, 512]


def test_bad_flag_fails_before_training(tmp_path):
  result = testutil.run_main(['--train_batch_size=0',
                              f'--model_dir={tmp_path}'])
  assert result.returncode != 0
  assert '--train_batch_size' in result.stderr
  assert not os.listdir(tmp_path)


def test_unreachable_tpu_fails_naming_the_flag(tmp_path):
  with testutil.closed_port() as port:
    tpu = f'grpc://127.0.0.1:{port}'
    result = testutil.run_main([f'--tpu={tpu}', f'--model_dir={tmp_path}'])
  assert result.returncode != 0
  assert f'--tpu={tpu}' in result.stderr
  assert 'not reachable' in result.stderr
  assert 'Traceback' not in result.stderr
  assert tf.train.latest_checkpoint(str(tmp_path)) is None
