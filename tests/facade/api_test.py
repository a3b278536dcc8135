"""The trainer.legacy facade's names, configuration objects and stand-ins.

Where the facade is installed (TF >= 2.16; conftest installs it), legacy
import paths resolve to it; on TF 2.15 install() leaves the real Estimator.
The classes themselves are checked on every lane.
"""

import copy
import importlib
import json
import os
import sys

import pytest
import tensorflow as tf

from tests import testutil
from trainer.api import estimator_names as estimator_compat
from trainer.api import specs
from trainer.compat import cpu_fallback as cluster
from trainer.compat import facade_private
from trainer.compat import v2_behavior as behavior
from trainer.facade import estimator as estimator_lib
from trainer.facade import gc
from trainer.facade import install
from trainer.facade import run_config
from trainer.facade import unsupported
from trainer.facade.distributed import session_config
from trainer.facade.export import export
from trainer.facade.hooks import fake_summary_writer
from trainer.facade.hooks import hooks
from trainer.facade.tpu import tpu_config as tpu_config_lib
from trainer.facade.tpu import tpu_estimator
from trainer.facade.tpu import util
from trainer.engines.tf2 import checkpoint_listeners
from trainer.engines.tf2 import graph_check

# -- where the names are ------------------------------------------------------

@testutil.facade_lanes
def test_public_and_private_paths_resolve_to_the_facade():
  # As tensorflow_estimator: tf.estimator's Estimator hides the deprecated
  # export_savedmodel that tf.compat.v1.estimator's keeps.
  assert tf.estimator.Estimator is estimator_lib.EstimatorV2
  assert tf.compat.v1.estimator.Estimator is estimator_lib.Estimator
  assert issubclass(tf.estimator.Estimator, tf.compat.v1.estimator.Estimator)
  with pytest.raises(AttributeError, match='use `export_saved_model`'):
    tf.estimator.Estimator(lambda features: None).export_savedmodel
  assert callable(tf.compat.v1.estimator.Estimator(
      lambda features: None).export_savedmodel)
  assert tf.compat.v1.estimator.tpu.TPUEstimator is tpu_estimator.TPUEstimator
  assert tf.compat.v1.estimator.tpu.RunConfig is tpu_config_lib.TPURunConfig
  assert tf.compat.v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2 == 3
  assert tf.estimator.export.PredictOutput is facade_private.PredictOutput
  assert tf.estimator.SessionRunHook is tf.compat.v1.train.SessionRunHook
  assert tf.estimator.LoggingTensorHook is tf.compat.v1.train.LoggingTensorHook
  assert not hasattr(tf.estimator, 'tpu')  # TF2 API: tpu is v1 only.
  from tensorflow.compat.v1 import estimator as tf_estimator  # pylint: disable=g-import-not-at-top
  assert tf_estimator.tpu.TPUConfig is tpu_config_lib.TPUConfig
  for path, name in (
      ('tensorflow.python.estimator.estimator', 'Estimator'),
      ('tensorflow_estimator.python.estimator.estimator', 'Estimator'),
      ('tensorflow_estimator.python.estimator.tpu.tpu_estimator',
       'TPUEstimator'),
      ('tensorflow_estimator.python.estimator.tpu.tpu_config', 'TPUConfig'),
      ('tensorflow_estimator.python.estimator.export.export_output',
       'PredictOutput'),
      ('tensorflow_estimator.python.estimator.model_fn', 'EstimatorSpec'),
      ('tensorflow_estimator.python.estimator.run_config', 'RunConfig'),
      ('tensorflow_estimator.python.estimator.training', 'TrainSpec'),
      ('tensorflow_estimator.python.estimator.tpu.tpu_estimator',
       'model_fn_inference_on_tpu'),
      ('tensorflow_estimator.python.estimator.hooks.basic_session_run_hooks',
       'SummarySaverHook'),
      ('tensorflow_estimator.python.estimator.hooks.session_run_hook',
       'SessionRunArgs'),
      ('tensorflow_estimator.python.estimator.hooks.fake_summary_writer',
       'FakeSummaryWriter')):
    assert hasattr(importlib.import_module(path), name), path
  from tensorflow.python.estimator import estimator  # pylint: disable=g-import-not-at-top
  assert estimator._load_global_step_from_checkpoint_dir('/nonexistent') == 0  # pylint: disable=protected-access
  import tensorflow_estimator  # pylint: disable=g-import-not-at-top
  assert tensorflow_estimator.estimator.tpu.TPUEstimator is (
      tpu_estimator.TPUEstimator)
  with pytest.raises(AttributeError, match='has no attribute .Nope.*Step 0'):
    tf.estimator.Nope  # pylint: disable=pointless-statement
  assert sys.modules['tensorflow.compat.v1.estimator.export'] is (
      tf.compat.v1.estimator.export)


@testutil.facade_lanes
def test_install_is_idempotent_and_has_estimator_means_the_real_one():
  assert not install.install()  # conftest installed it.
  assert install.installed() and not estimator_compat.has_estimator()


def test_install_changes_nothing_where_estimator_exists():
  if not testutil.HAS_ESTIMATOR:
    pytest.skip('TF without Estimator: covered by the facade tests.')
  assert not install.install() and not install.installed()
  assert tf.compat.v1.estimator.tpu.TPUEstimator is not (
      tpu_estimator.TPUEstimator)


def test_unsupported_apis_fail_naming_the_alternative():
  for api in unsupported.APIS:
    with pytest.raises(unsupported.UnsupportedApiError, match=api):
      unsupported.stub(api)()
  if not testutil.HAS_ESTIMATOR:  # Supported now: TF 2.15's checks.
    with pytest.raises(ValueError, match='Exactly one of `feature_columns`'):
      tf.compat.v1.estimator.tpu.experimental.EmbeddingConfigSpec()


@pytest.mark.parametrize('api', ['tf.estimator', 'tf.compat.v1.estimator'])
def test_boosted_trees_are_an_attribute_error_as_on_tf_2_15(api):
  """tensorflow_estimator 2.15 has no boosted-trees Estimators in either
  namespace: AttributeError there, and through the facade one naming the
  module the program used and the alternative."""
  module = tf.estimator if api == 'tf.estimator' else tf.compat.v1.estimator
  expected = ('Decision Forests' if not testutil.HAS_ESTIMATOR else
              'BoostedTreesClassifier')
  with pytest.raises(AttributeError, match=expected) as raised:
    module.BoostedTreesClassifier  # pylint: disable=pointless-statement
  if not testutil.HAS_ESTIMATOR:
    assert f"module '{api.replace('tf', 'tensorflow', 1)}'" in str(
        raised.value)


def test_tf2_behavior_is_restored_after_a_tf2_runner_call():
  """A program that disabled TF2 behaviour keeps it disabled around the
  facade's tf2-runner calls, which get TF2 behaviour inside."""
  tf.compat.v1.disable_resource_variables()
  try:
    with behavior.tf2_behavior():
      assert tf.executing_eagerly()
      assert tf.compat.v1.resource_variables_enabled()
    assert not tf.compat.v1.resource_variables_enabled()
  finally:
    tf.compat.v1.enable_resource_variables()


# -- configuration objects ------------------------------------------------------

def test_run_config_defaults_replace_and_checks(monkeypatch):
  monkeypatch.delenv('TF_CONFIG', raising=False)
  config = run_config.RunConfig()
  assert (config.save_checkpoints_secs, config.save_checkpoints_steps) == (
      600, None)
  assert config.keep_checkpoint_max == 5 and config.log_step_count_steps == 100
  # Estimator's values for a program without TF_CONFIG.
  assert config.is_chief and config.task_type == 'worker'
  assert config.task_id == 0 and config.master == ''
  steps = config.replace(save_checkpoints_steps=10)
  assert (steps.save_checkpoints_secs, steps.save_checkpoints_steps) == (
      None, 10)
  assert config.save_checkpoints_secs == 600  # replace() copies.
  with pytest.raises(ValueError, match='cannot be both set'):
    run_config.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
  with pytest.raises(ValueError, match='save_checkpoints_steps should be'):
    run_config.RunConfig(save_checkpoints_steps=-1)
  with pytest.raises(ValueError, match='Replacing nonsense is not supported'):
    config.replace(nonsense=1)


def test_run_config_reads_tf_config(monkeypatch):
  monkeypatch.setenv('TF_CONFIG', json.dumps({
      'cluster': {'chief': ['h0:1'], 'worker': ['h1:1', 'h2:1'],
                  'ps': ['h3:1']},
      'task': {'type': 'worker', 'index': 1}}))
  config = run_config.RunConfig()
  assert (config.task_type, config.task_id, config.is_chief) == (
      'worker', 1, False)
  assert config.num_worker_replicas == 3 and config.num_ps_replicas == 1
  assert config.master == 'grpc://h2:1' and config.global_id_in_cluster == 2


def test_tpu_config_and_tpu_run_config():
  config = tpu_config_lib.TPUConfig(iterations_per_loop=50, num_shards=8,
                                    per_host_input_for_training=True)
  assert config.per_host_input_for_training == (
      tpu_config_lib.InputPipelineConfig.PER_HOST_V1)
  assert tpu_config_lib.TPUConfig().iterations_per_loop == 2
  with pytest.raises(ValueError, match='must be positive'):
    tpu_config_lib.TPUConfig(iterations_per_loop=0)
  ten_minutes = tpu_config_lib.TPUConfig(iterations_per_loop='10m')
  assert util.parse_iterations_per_loop(
      ten_minutes.iterations_per_loop) == (600, 'seconds')
  resolver = cluster.NoTPUClusterResolver('test')
  tpu_config = tpu_config_lib.TPURunConfig(cluster=resolver, tpu_config=config)
  assert tpu_config.master == '' and tpu_config.cluster is resolver
  assert tpu_config.session_config.allow_soft_placement
  assert tpu_config.replace(model_dir='/x').tpu_config is config
  with pytest.raises(ValueError, match='Both master and cluster are set'):
    tpu_config_lib.TPURunConfig(cluster=resolver, master='grpc://a:1')


def test_session_config_applies_what_tf2_can():
  applied = session_config.apply(tf.compat.v1.ConfigProto(
      allow_soft_placement=True, graph_options=tf.compat.v1.GraphOptions(
          build_cost_model=1)))
  assert applied == ['allow_soft_placement=True']


# -- specs, receivers, hooks ----------------------------------------------------

def test_spec_types_check_what_estimator_checks():
  keys = specs.ModeKeys
  assert (keys.TRAIN, keys.EVAL, keys.PREDICT) == ('train', 'eval', 'infer')
  with pytest.raises(ValueError, match='Missing train_op'):
    specs.EstimatorSpec(keys.TRAIN, loss=tf.constant(1.))
  with pytest.raises(ValueError, match='Missing predictions'):
    specs.EstimatorSpec(keys.PREDICT)
  with pytest.raises(TypeError, match='SessionRunHook'):
    specs.TPUEstimatorSpec(keys.TRAIN, training_hooks=[object()])
  with pytest.raises(ValueError, match='Loss must be scalar'):
    specs.EstimatorSpec(keys.EVAL, loss=tf.constant([1., 2.]))
  assert specs.EstimatorSpec(  # One element: reshaped to a scalar.
      keys.EVAL, loss=tf.constant([[1.]])).loss.shape == ()
  spec = specs.TPUEstimatorSpec(keys.EVAL, loss=tf.constant(1.))
  assert spec.training_hooks == () and spec.scaffold_fn is None


def test_serving_input_receivers_as_estimator_builds_them():
  with tf.Graph().as_default():
    images = tf.compat.v1.placeholder(tf.float32, [None, 4], name='images')
    receiver = export.ServingInputReceiver(images, images)
    assert set(receiver.features) == {'feature'}
    assert set(receiver.receiver_tensors) == {'input'}
    tensor = export.TensorServingInputReceiver(images, {'images': images})
    assert tensor.features is images
    with pytest.raises(ValueError, match='keys must be strings'):
      export.ServingInputReceiver({1: images}, {1: images})
    raw = export.build_raw_serving_input_receiver_fn(
        {'x': tf.zeros([3, 5]), 'y': tf.zeros([3], tf.int64)})()
    assert raw.features['x'].shape.as_list() == [None, 5]
    assert raw.features['y'].dtype == tf.int64
    parsing = export.build_parsing_serving_input_receiver_fn(
        {'x': tf.io.FixedLenFeature([2], tf.float32)})()
    assert list(parsing.receiver_tensors) == ['examples']
    assert parsing.features['x'].shape.as_list() == [None, 2]


def test_hook_configuration_is_read_on_this_tensorflow():
  assert facade_private.stop_hook_config(hooks.StopAtStepHook(5)) == (5, None)
  assert hooks.stop_step([hooks.StopAtStepHook(last_step=9),
                          hooks.StopAtStepHook(num_steps=3)], 4) == 7
  listener = hooks.CheckpointSaverListener()
  saver = hooks.CheckpointSaverHook('/m', save_secs=60, listeners=[listener])
  config = facade_private.saver_hook_config(saver)
  assert (config['every_steps'], config['every_secs']) == (None, 60)
  assert config['listeners'] == [listener] and config['dir'] == '/m'
  others, cadence, listeners = checkpoint_listeners.split_saver_hooks(
      [saver, hooks.StopAtStepHook(5)], '/m')
  assert cadence == (None, 60) and listeners == [listener]
  assert [type(h) for h in others] == [hooks.StopAtStepHook]


def test_graph_check_finds_unfetched_variable_updates():
  variable = tf.Variable(1.0)
  metric = tf.Variable(0.0)

  @tf.function(autograph=False)
  def traced():
    recorder = graph_check.Recorder()
    started = graph_check.Recorder.start()
    used = variable.assign_add(1.0)
    metric.assign_add(1.0)  # Exempt: a metric the step updates.
    variable.assign_sub(5.0)  # Nothing depends on it.
    recorder.add(started, [used], [metric])
    recorder.check('eval')

  with pytest.raises(graph_check.UnfetchedUpdateError,
                     match='1 variable update.*AssignSubVariableOp'):
    traced()


def test_cpu_fallback_resolver_means_no_tpu():
  real = tf.distribute.cluster_resolver.TPUClusterResolver
  patched = cluster._fallback_class(real)  # pylint: disable=protected-access
  resolver = patched('')
  assert cluster.is_fallback(resolver)
  assert resolver.master() == '' and not resolver.cluster_spec()
  assert resolver.num_accelerators() == {}
  grpc = patched('grpc://10.0.0.1:8470')  # Resolves without a lookup.
  assert isinstance(grpc, real) and grpc.master() == 'grpc://10.0.0.1:8470'


def test_migration_doc_lists_every_unsupported_api_with_its_error():
  with open(os.path.join(testutil.REPO_ROOT, 'MIGRATION.md')) as f:
    doc = f.read()
  step0 = doc[doc.index('## Step 0'):doc.index('## 1.')]
  for api, (why, alternative) in unsupported.APIS.items():
    assert f'`{api.rsplit(".", 1)[1]}`' in step0, api
    assert f'| {why} | {alternative} |' in step0, api
  # And no row for an API that is supported (a stale row).
  table = step0[step0.index('| API | why | instead |'):].splitlines()[2:]
  rows = table[:next(i for i, line in enumerate(table)
                     if not line.startswith('|'))]
  reasons = {f'| {why} | {alternative} |'
             for why, alternative in unsupported.APIS.values()}
  for row in rows:
    assert any(row.endswith(r) for r in reasons), f'stale row: {row}'


def test_config_copies_share_what_cannot_be_copied():
  strategy = tf.distribute.get_strategy()
  config = tpu_config_lib.TPURunConfig(
      cluster=cluster.NoTPUClusterResolver('test'), train_distribute=strategy,
      session_config=tf.compat.v1.ConfigProto(allow_soft_placement=True))
  copied = copy.deepcopy(config)
  assert copied.train_distribute is strategy
  assert copied.cluster is config.cluster
  assert copied.session_config == config.session_config
  assert copied.session_config is not config.session_config


def test_gc_lists_through_the_platform_gfile_and_strips_gcs_slashes():
  """Estimator's gc lists with gfile.ListDirectory (its tests mock it), whose
  GCS entries end with '/'."""
  from unittest import mock  # pylint: disable=g-import-not-at-top
  with mock.patch('tensorflow.python.platform.gfile.ListDirectory',
                  return_value=['1700000001/', 'x/', '1700000000/']):
    paths = gc._get_paths('gs://bucket/foo', gc.export_version)  # pylint: disable=protected-access
  assert paths == [gc.Path('gs://bucket/foo/1700000000', 1700000000),
                   gc.Path('gs://bucket/foo/1700000001', 1700000001)]


def test_fake_summary_writer_records_a_summary_saver_hooks_summaries(
    tmp_path):
  """Installed, FileWriterCache hands out FakeSummaryWriters that keep each
  step's summaries; uninstalled, TF's FileWriter is back."""
  fake = fake_summary_writer.FakeSummaryWriter
  original = tf.compat.v1.summary.FileWriter
  fake.install()
  try:
    with pytest.raises(ValueError, match='already installed'):
      fake.install()
    with tf.Graph().as_default():
      step = tf.compat.v1.train.get_or_create_global_step()
      summary = tf.compat.v1.summary.scalar('two', tf.constant(2.0))
      hook = tf.compat.v1.train.SummarySaverHook(
          save_steps=2, output_dir=str(tmp_path), summary_op=summary)
      increment = tf.compat.v1.assign_add(step, 1)
      with tf.compat.v1.train.SingularMonitoredSession(hooks=[hook]) as sess:
        for _ in range(4):
          sess.run(increment)
      writer = tf.compat.v1.summary.FileWriterCache.get(str(tmp_path))
    assert isinstance(writer, fake)
    steps = sorted(writer.summaries)  # Every 2 steps from the first.
    assert len(steps) == 2 and steps[1] - steps[0] == 2
    writer.assert_summaries(
        absltest_case(), expected_logdir=str(tmp_path),
        expected_summaries={s: {'two': 2.0} for s in steps})
    with pytest.raises(AssertionError):
      writer.assert_summaries(absltest_case(),
                              expected_summaries={steps[0]: {'two': 3.0}})
  finally:
    fake.uninstall()
    tf.compat.v1.summary.FileWriterCache.clear()
  with pytest.raises(ValueError, match='not installed'):
    fake.uninstall()
  from tensorflow.python.summary.writer import writer as writer_lib  # pylint: disable=g-import-not-at-top
  assert writer_lib.FileWriter is original


def absltest_case():
  import unittest  # pylint: disable=g-import-not-at-top
  return unittest.TestCase()
