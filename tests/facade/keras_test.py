"""model_to_estimator through the facade against TF 2.15's (keras_lib).

keras_program.py's cells (Functional, Sequential and subclassed models;
name-based and object checkpoints; tf.compat.v1 and Keras optimizers;
sample weights; a model loaded from an HDF5 file; several inputs and
outputs with metric_names_map and export_outputs; a MirroredStrategy of 2
replicas for training and evaluation, made eagerly here; a local
train_and_evaluate with an exporter) run through the facade and are
compared with what TF 2.15's model_to_estimator recorded (golden/keras.json,
`.venv/legacy/bin/python -m tests.facade.regenerate`): the first checkpoint
made from the Keras weights, the final checkpoint's names, dtypes, shapes
and values, every step's loss and the other summaries, metrics, predictions
and the exported signatures with their outputs. Checkpoints cross lanes:
the facade trains on from TF 2.15's model dirs (golden/keras_checkpoints),
and TF 2.15 from the facade's (when .venv/legacy is installed), as TF 2.15
does from its own. On a loopback TF_CONFIG cluster (chief, worker, ps,
evaluator) train_and_evaluate ends on every task as under TF 2.15, with
the same variables, metrics and export.
"""

import json
import os

import pytest
import tensorflow as tf

from tests import testutil
from tests.canned import compare
from tests.facade import regenerate

LEGACY_PYTHON = os.path.join(testutil.REPO_ROOT, '.venv', 'legacy', 'bin',
                             'python')
with open(os.path.join(regenerate.GOLDEN, 'keras.json')) as _f:
  GOLDEN = json.load(_f)
PARTS = ('keras_ckpt', 'variables', 'summaries', 'metrics', 'predictions',
         'export', 'train_and_evaluate')

pytestmark = testutil.facade_lanes


@pytest.fixture(scope='module')
def fresh(tmp_path_factory):
  """(records, work dir) of every cell through the facade."""
  work = tmp_path_factory.mktemp('keras')
  return regenerate.run('keras_program.py', f'--work_dir={work}',
                        '--eager_strategy'), work


@pytest.mark.parametrize('part', PARTS)
@pytest.mark.parametrize('cell', sorted(GOLDEN['fresh']))
def test_cell_matches_tf215(fresh, cell, part):
  records, _ = fresh
  got, real = records[cell], GOLDEN['fresh'][cell]
  assert 'error' not in got, got['error']
  if part not in real:
    assert part not in got
    return
  diffs = compare.differences(compare.comparable(part, real[part]),
                              compare.comparable(part, got[part]))
  assert not diffs, '\n'.join(diffs[:25])


def test_goldens_hold_what_the_cells_promise():
  fresh = GOLDEN['fresh']
  assert set(fresh) == {'functional_saver', 'functional_checkpoint',
                        'sequential_weighted', 'subclassed', 'multi_io',
                        'from_path', 'mirrored', 'train_and_evaluate'}
  for cell, record in fresh.items():
    assert record['metrics']['global_step'] == 6, cell
    # The loss of every step (Keras's own `loss` name taken: loss_N).
    loss_tags = [t for t in record['summaries']['.'] if t.startswith('loss')]
    assert len(loss_tags) == 1, cell
    assert len(record['summaries']['.'][loss_tags[0]]) == 6, cell
  # Name-based and object checkpoints; the subclassed model is not warm
  # started (model_to_estimator cannot carry its weights over).
  assert 'dense/kernel' not in fresh['functional_saver']['variables']
  assert 'hidden/kernel' in fresh['functional_saver']['variables']
  assert ('layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE' in
          fresh['functional_checkpoint']['variables'])
  assert fresh['subclassed']['keras_ckpt'] is None
  assert set(fresh['multi_io']['metrics']) == {'c/mae', 'd/acc', 'loss',
                                               'global_step'}
  assert set(fresh['multi_io']['export']) == {'c', 'd', 'serving_default'}


def _assert_resumed_as_tf215(got):
  for cell, real in GOLDEN['resumed'].items():
    assert 'error' not in got[cell], got[cell]['error']
    assert real['metrics']['global_step'] == 12
    for part in ('variables', 'metrics'):
      diffs = compare.differences(real[part], got[cell][part])
      assert not diffs, f'{cell} {part}:\n' + '\n'.join(diffs[:25])


def test_facade_resumes_tf215_checkpoints(tmp_path):
  """The facade trains on from TF 2.15's model dirs (both checkpoint
  formats, golden/keras_checkpoints) as TF 2.15 did."""
  _assert_resumed_as_tf215(regenerate.run(
      'keras_program.py', f'--work_dir={tmp_path}',
      f'--from_dir={regenerate.CHECKPOINTS}',
      f'--cells={",".join(regenerate.RESUMED)}'))


@pytest.mark.skipif(not os.path.exists(LEGACY_PYTHON),
                    reason='needs .venv/legacy (TF 2.15) to resume on')
def test_tf215_resumes_facade_checkpoints(fresh, tmp_path):
  """TF 2.15's model_to_estimator trains on from the facade's model dirs
  (both checkpoint formats) as from its own."""
  _, work = fresh
  _assert_resumed_as_tf215(regenerate.run(
      'keras_program.py', f'--work_dir={tmp_path}', f'--from_dir={work}',
      f'--cells={",".join(regenerate.RESUMED)}', python=LEGACY_PYTHON))


def test_train_and_evaluate_on_a_cluster_as_tf215(tmp_path):
  """A chief, a worker, a ps and an evaluator (TF_CONFIG as Kubeflow writes
  it) train_and_evaluate model_to_estimator's Estimator: every task ends
  as under TF 2.15, the chief's first checkpoint holds the Keras weights,
  the checkpoint the same variables (on the ps), the evaluator the same
  metrics and export."""
  got = regenerate.run_cluster(str(tmp_path))
  for task, record in got.items():
    assert record['exit'] == 0, f'{task}:\n{record.get("log")}'
  # Asynchronous training may end past max_steps: up to two steps per
  # trainer but the one that reached it (tests/cluster/clusterutil.py).
  step = got['evaluator:0'].pop('checkpoint_step')
  assert 30 <= step <= 30 + 2 * 2 - 1, step
  real = {t: {k: v for k, v in r.items() if k != 'checkpoint_step'}
          for t, r in GOLDEN['cluster'].items()}
  diffs = compare.differences(real, got)
  assert not diffs, '\n'.join(diffs[:25])


# -- In process: the facade's own module, its checks and its errors. --------


def _compiled_model(optimizer='sgd'):
  keras = tf.keras
  model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
  model.compile(optimizer, 'mse')
  return model


def test_keras_estimator_api_reaches_the_facades_keras_lib(tmp_path):
  import sys  # pylint: disable=g-import-not-at-top
  from trainer.facade import keras_lib  # pylint: disable=g-import-not-at-top
  assert sys.modules['tensorflow_estimator.python.estimator.keras_lib'] is (
      keras_lib)
  est = tf.keras.estimator.model_to_estimator(
      keras_model=_compiled_model(tf.keras.optimizers.legacy.SGD(0.1)),
      model_dir=str(tmp_path))
  assert isinstance(est, tf.estimator.Estimator)
  # tf.keras.estimator's v2 default: object-based checkpoints.
  names = [n for n, _ in tf.train.list_variables(str(tmp_path / 'keras'))]
  assert '_CHECKPOINTABLE_OBJECT_GRAPH' in names
  est_v1 = tf.compat.v1.keras.estimator.model_to_estimator(
      keras_model=_compiled_model(tf.keras.optimizers.legacy.SGD(0.1)),
      model_dir=str(tmp_path / 'v1'))
  names = [n for n, _ in tf.train.list_variables(str(tmp_path / 'v1' /
                                                     'keras'))]
  assert 'dense_1/kernel' in names or 'dense/kernel' in names
  assert est_v1.model_dir == str(tmp_path / 'v1')


def test_model_to_estimator_refuses_as_tf215(tmp_path):
  from trainer.facade import keras_lib  # pylint: disable=g-import-not-at-top
  with pytest.raises(ValueError, match='Either `keras_model` or'):
    keras_lib.model_to_estimator()
  with pytest.raises(ValueError, match='not both'):
    keras_lib.model_to_estimator(keras_model=_compiled_model(),
                                 keras_model_path=str(tmp_path))
  uncompiled = tf.keras.Sequential([tf.keras.layers.Dense(2,
                                                          input_shape=(3,))])
  with pytest.raises(ValueError, match='has not been compiled yet'):
    keras_lib.model_to_estimator(keras_model=uncompiled,
                                 model_dir=str(tmp_path))
  with pytest.raises(ValueError, match='Checkpoint format must be one of'):
    keras_lib.model_to_estimator(keras_model=_compiled_model(),
                                 model_dir=str(tmp_path),
                                 checkpoint_format='object')
  with pytest.raises(ValueError, match='`model_dir` are set both'):
    keras_lib.model_to_estimator(
        keras_model=_compiled_model(), model_dir=str(tmp_path),
        config=tf.estimator.RunConfig(model_dir=str(tmp_path / 'other')))


def test_a_keras3_model_is_refused_with_what_to_do():
  keras3 = pytest.importorskip('keras')
  if not keras3.__version__.startswith('3.'):
    pytest.skip('no Keras 3 installed')
  from trainer.facade import keras_lib  # pylint: disable=g-import-not-at-top
  model = keras3.Sequential([keras3.Input((3,)), keras3.layers.Dense(2)])
  model.compile('sgd', 'mse')
  with pytest.raises(TypeError, match='Keras 2 .*trainer.legacy'):
    keras_lib.model_to_estimator(keras_model=model)


def test_invalid_metric_names_map_fails_at_the_model_fn_as_tf215(tmp_path):
  from trainer.facade import keras_lib  # pylint: disable=g-import-not-at-top
  model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
  model.compile(tf.keras.optimizers.legacy.SGD(0.1), 'mse', ['mae'])
  est = keras_lib.model_to_estimator(
      keras_model=model, model_dir=str(tmp_path), checkpoint_format='saver',
      metric_names_map={'mse': 'x'})

  def input_fn():
    return tf.data.Dataset.from_tensors((tf.ones([2, 3]), tf.ones([2, 2])))

  with pytest.raises(ValueError, match=r'Invalid `metric_names_map`.*"\[.mae'
                     r'.\]" do not exist'):
    est.evaluate(input_fn, steps=1)
