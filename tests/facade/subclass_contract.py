r"""The calls Estimator and TPUEstimator make into their overridable methods,
recorded with a subclass that overrides each (as libraries built on
Estimator do) and replaces the private override check with a staticmethod.

record(kind) runs one scenario on this lane's Estimator (the real one on TF
2.15, the facade on TF >= 2.16): kind 'estimator' (tf.compat.v1's),
'estimator_v2' (tf.estimator's) or 'tpu_estimator' (use_tpu=False), each
constructed, trained 2 steps, evaluated 1 step, asked for 2 predictions and
exported; the result is the ordered list of [method, args, kwargs] of every
call into an overridable method, the arguments described as both lanes can
compare them (tensors, variables, specs, graphs by kind; hooks by class;
paths relative to the model directory). The golden file holds the real
Estimator's:

  .venv/legacy/bin/python -m tests.facade.subclass_contract   # rewrite it
"""

import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden',
                      'subclass_calls.json')
KINDS = ('estimator', 'estimator_v2', 'tpu_estimator')
# The overridable methods recorded (tensorflow_estimator 2.15's Estimator
# and TPUEstimator's; a class lacking one is not given it).
METHODS = (
    'train', 'evaluate', 'predict', 'export_saved_model',
    'experimental_export_all_saved_models', 'export_savedmodel',
    'latest_checkpoint', 'eval_dir', 'get_variable_value',
    'get_variable_names', '_convert_train_steps_to_hooks', '_train_model',
    '_train_model_default', '_train_model_distributed',
    '_actual_train_model_distributed', '_train_with_estimator_spec',
    '_train_with_estimator_spec_distributed', '_create_and_assert_global_step',
    '_create_global_step', '_get_features_and_labels_from_input_fn',
    '_get_features_from_input_fn', '_get_iterator_from_input_fn',
    '_validate_features_in_predict_input', '_call_input_fn', '_call_model_fn',
    '_actual_eval', '_convert_eval_steps_to_hooks', '_evaluate_build_graph',
    '_call_model_fn_eval', '_call_model_fn_eval_distributed', '_evaluate_run',
    '_maybe_warm_start', '_extract_keys', '_extract_batch_length',
    '_export_all_saved_models', '_add_meta_graph_for_mode',
    '_call_model_fn_for_inference', '_augment_model_fn')
# Classes of the two lanes that play the same role under other names.
_SAME_ROLE = {'TPURunConfig': 'RunConfig', 'TPUConfig': 'TPUConfig'}


def _is_spec(value):
  return isinstance(value, tuple) and 'train_op' in getattr(value, '_fields',
                                                            ())


def describe(value, paths):
  """A JSON form of a call argument both lanes can compare (`paths`:
  {directory: its placeholder})."""
  if value is None or isinstance(value, (bool, int, float)):
    return value
  if isinstance(value, bytes):
    value = value.decode()
  if isinstance(value, str):
    for directory, placeholder in paths.items():
      value = value.replace(directory, placeholder)
    return value
  if _is_spec(value):
    return f'{type(value).__name__}(mode={value.mode})'
  if isinstance(value, dict):
    return {str(k): describe(v, paths) for k, v in sorted(value.items())}
  if isinstance(value, (list, tuple)):
    return [describe(v, paths) for v in value]
  if isinstance(value, tf.Variable):
    return 'Variable'
  if isinstance(value, (tf.Tensor, tf.sparse.SparseTensor)):
    return 'Tensor'
  if isinstance(value, tf.Operation):
    return 'Operation'
  if isinstance(value, tf.Graph):
    return 'Graph'
  if isinstance(value, np.ndarray):
    return f'ndarray{list(value.shape)}'
  if isinstance(value, tf.compat.v1.train.SessionRunHook):
    return f'hook:{type(value).__name__.lstrip("_")}'
  if callable(value) and hasattr(value, '__name__') and not isinstance(
      value, type):
    return f'<function {value.__name__}>'
  name = type(value).__name__
  return _SAME_ROLE.get(name, name)


def recorder(base, calls, paths):
  """A subclass of `base` that records every call into METHODS to `calls`
  and replaces Estimator's override check by a staticmethod (which gets
  the instance, as Estimator calls it)."""

  def wrap(name):
    def method(self, *args, **kwargs):
      calls.append([name, describe(list(args), paths),
                    describe(kwargs, paths)])
      return getattr(super(subclass, self), name)(*args, **kwargs)
    method.__name__ = name
    return method

  def check(estimator):
    calls.append(['_assert_members_are_not_overridden',
                  [type(estimator).__name__], {}])

  members = {name: wrap(name) for name in METHODS if hasattr(base, name)}
  members['_assert_members_are_not_overridden'] = staticmethod(check)
  subclass = type(f'Library{base.__name__}', (base,), members)
  return subclass


def _data():
  x = np.array([[1., 2.], [3., 4.], [5., 6.], [7., 8.]], np.float32)
  y = np.array([[1.], [0.], [1.], [0.]], np.float32)
  return x, y


def train_input_fn(params=None):
  del params
  x, y = _data()
  return tf.data.Dataset.from_tensor_slices(({'x': x}, y)).batch(2)


def predict_input_fn(params=None):
  del params
  x, _ = _data()
  return tf.data.Dataset.from_tensor_slices({'x': x}).batch(2)


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name='x')
  return tf.estimator.export.ServingInputReceiver({'x': x}, {'x': x})


def _model_fn(features, labels, mode, params=None):
  """A linear model; TPUEstimatorSpec when params say TPU."""
  del params
  logits = tf.compat.v1.layers.dense(features['x'], 1, name='dense')
  predictions = {'logits': logits}
  loss = train_op = None
  if mode != tf.estimator.ModeKeys.PREDICT:
    loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(
      mode, predictions=predictions, loss=loss, train_op=train_op,
      export_outputs={'serving_default':
                      tf.estimator.export.PredictOutput(predictions)})


def model_fn(features, labels, mode):
  return _model_fn(features, labels, mode)


def tpu_model_fn(features, labels, mode, params):
  spec = _model_fn(features, labels, mode, params)
  return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
      mode, predictions=spec.predictions, loss=spec.loss,
      train_op=spec.train_op, export_outputs=spec.export_outputs)


def _construct(kind, model_dir, calls, paths):
  v1 = tf.compat.v1.estimator
  if kind == 'tpu_estimator':
    cls = recorder(v1.tpu.TPUEstimator, calls, paths)
    config = v1.tpu.RunConfig(
        model_dir=model_dir, tf_random_seed=1, save_checkpoints_steps=2,
        tpu_config=v1.tpu.TPUConfig(iterations_per_loop=1))
    return cls(model_fn=tpu_model_fn, config=config, use_tpu=False,
               train_batch_size=2, eval_batch_size=2, predict_batch_size=2)
  base = tf.estimator.Estimator if kind == 'estimator_v2' else v1.Estimator
  cls = recorder(base, calls, paths)
  return cls(model_fn=model_fn, model_dir=model_dir, config=v1.RunConfig(
      tf_random_seed=1, save_checkpoints_steps=2))


def record(kind, workdir=None):
  """The calls of one scenario (see the module docstring)."""
  workdir = workdir or tempfile.mkdtemp()
  model_dir = os.path.join(workdir, 'model')
  export_dir = os.path.join(workdir, 'export')
  paths = {model_dir: '<model_dir>', export_dir: '<export_dir>'}
  calls = []
  estimator = _construct(kind, model_dir, calls, paths)
  estimator.train(train_input_fn, steps=2)
  estimator.evaluate(train_input_fn, steps=1)
  predictions = estimator.predict(predict_input_fn)
  for _ in range(2):
    next(predictions)
  predictions.close()
  path = estimator.export_saved_model(export_dir, serving_input_receiver_fn)
  # The timestamped directory varies: only its parent is compared.
  assert os.path.dirname(tf.compat.as_text(path)) == export_dir
  return [c for c in calls]


def record_all():
  return {kind: record(kind) for kind in KINDS}


def main():
  with open(GOLDEN, 'w', encoding='utf-8') as f:
    json.dump({'tensorflow': tf.__version__, 'calls': record_all()}, f,
              indent=1, sort_keys=True)
    f.write('\n')
  print(f'wrote {GOLDEN}')


if __name__ == '__main__':
  sys.exit(main())
