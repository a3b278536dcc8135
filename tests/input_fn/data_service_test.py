"""--tf_data_service: a dispatcher and two workers on loopback, in this process.

The servers listen on ports the OS picks (port 0) and serve from their own
threads, so a trainer started as a subprocess can train from them while the
test waits for it.
"""

import re

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

import flags as trainer_flags
from input_fn import data_service
from input_fn import tfrecord
from scripts import tf_data_service
from tests import testutil


@pytest.fixture(scope='module')
def dispatcher():
  """grpc:// address of a dispatcher with two workers, for this module."""
  server = tf_data_service.start('dispatcher', host='localhost')
  workers = [tf_data_service.start('worker', dispatcher=server.target,
                                   host='localhost') for _ in range(2)]
  yield server.target
  for worker in workers:
    worker.stop()
  server.stop()


def _params(address, **overrides):
  extra = {'batch_size': overrides.pop('batch_size', 32)}
  if 'context' in overrides:  # What TPUEstimator adds for the input_fn.
    extra['context'] = overrides.pop('context')
  return testutil.base_params(extra=extra, **dict(
      {'mode': 'train', 'augmentation': 'pad_crop',
       'tf_data_service': address, 'model_dir': '/tmp/data-service-test'},
      **overrides))


def _op_types(dataset):
  graph = tf.compat.v1.GraphDef.FromString(
      dataset._as_serialized_graph().numpy())  # pylint: disable=protected-access
  return {node.op for node in graph.node}


def test_training_batches_come_from_the_service(dispatcher):
  dataset = tfrecord.input_fn(_params(dispatcher))
  assert any(op.startswith('DataServiceDataset') for op in _op_types(dataset))
  assert dataset.element_spec[0]['image'].shape.as_list() == [32, 28, 28, 1]
  batches = [(f['image'].numpy(), l.numpy()) for f, l in dataset.take(40)]
  for images, labels in batches:
    assert images.shape == (32, 28, 28, 1)
    assert -1.0 <= images.min() and images.max() <= 1.0
    assert set(labels) <= set(range(10))
  # Each worker draws its own seed: had they the same, every batch would
  # come twice (once from each worker).
  assert len({images.tobytes() for images, _ in batches}) == len(batches)


def test_two_hosts_share_one_job(dispatcher):
  names = set()
  for index in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2,
                                         input_pipeline_id=index,
                                         num_replicas_in_sync=2)
    params = _params(dispatcher, context=context)
    names.add(data_service.job_name(params))
    next(iter(tfrecord.input_fn(params)))
  assert len(names) == 1
  other_run = _params(dispatcher, model_dir='/tmp/another-run')
  assert data_service.job_name(other_run) not in names


def test_evaluation_reads_locally_in_order(dispatcher):
  local = tfrecord.input_fn(_params(None, mode='eval', batch_size=120))
  served = tfrecord.input_fn(_params(dispatcher, mode='eval', batch_size=120))
  assert not any(op.startswith('DataServiceDataset')
                 for op in _op_types(served))
  for (a, la), (b, lb) in zip(local, served):
    np.testing.assert_array_equal(a['image'].numpy(), b['image'].numpy())
    np.testing.assert_array_equal(la.numpy(), lb.numpy())


def test_a_dispatcher_that_does_not_answer_is_named():
  with testutil.closed_port() as port:  # Held, and nothing listens.
    with pytest.raises(ValueError, match=f'--tf_data_service=grpc://'
                       f'127.0.0.1:{port}: no dispatcher answers'):
      tfrecord.input_fn(_params(f'grpc://127.0.0.1:{port}'))


def test_address_must_be_grpc_host_port():
  with pytest.raises(ValueError, match='--tf_data_service'):
    tfrecord.input_fn(_params('localhost:5000'))
  fv = flags.FlagValues()
  trainer_flags.define_flags(fv)
  with pytest.raises(flags.IllegalFlagValueError, match='--tf_data_service'):
    fv(['prog', '--tf_data_service=dispatcher:5050/x'])
  with pytest.raises(ValueError, match='--dispatcher'):
    tf_data_service.start('worker', dispatcher='localhost:5000')


@pytest.mark.parametrize('runner', [
    pytest.param('estimator', marks=testutil.requires_estimator), 'tf2'])
def test_main_trains_from_the_service(dispatcher, runner, tmp_path):
  result = testutil.run_main([
      f'--tf_data_service={dispatcher}', f'--runner={runner}',
      f'--model_dir={tmp_path}', '--train_steps=200', '--steps_per_eval=200',
      '--iterations_per_loop=50', '--mlp_hidden_units=32'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'global_step: 200' in result.stdout
  accuracy = float(re.search(r'top_1_accuracy: ([\d.]+)',
                             result.stdout).group(1))
  assert accuracy > 0.8, result.stdout
