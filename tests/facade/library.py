r"""Three libraries built on Estimator's own modules, written as such
libraries write them, and what a user observes of each: run(case) on this
lane's Estimator (the real one on TF 2.15, the facade on TF >= 2.16).

  wrapper      an Estimator subclass whose constructor wraps the user's
               model_fn (adds a metric and a prediction, records the modes)
               and passes it to Estimator.__init__;
  override     a subclass that replaces Estimator's private override check
               and overrides _call_model_fn (extra prediction) and
               _create_global_step (a resource variable, as TPUEstimator);
  canned       a canned model built from the module-level helpers
               (estimator.maybe_overwrite_model_dir_and_session_config,
               canned.head's v1 head, canned.dnn._dnn_model_fn), warm-started
               from the same checkpoint on both lanes.
Each imports tensorflow_estimator.python.estimator.* as the library does.
The golden file holds the real Estimator's results:

  .venv/legacy/bin/python -m tests.facade.library   # rewrite it
"""

import json
import os
import re
import sys
import tempfile

import numpy as np
import tensorflow as tf

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden',
                      'library_results.json')
CASES = ('wrapper', 'override', 'canned')
_X = np.array([[0.5, -1.], [1.5, 2.], [-0.5, 0.5], [2., -1.5]], np.float32)
_Y = np.array([[1], [0], [1], [0]], np.int64)


def _input_fn():
  return tf.data.Dataset.from_tensor_slices(({'x': _X}, _Y)).repeat().batch(2)


def _eval_input_fn():
  return tf.data.Dataset.from_tensor_slices(({'x': _X}, _Y)).batch(2)


def _predict_input_fn():
  return tf.data.Dataset.from_tensor_slices({'x': _X}).batch(2)


def _linear_model_fn(features, labels, mode):
  """A zero-initialised linear model (the same start on every lane)."""
  logits = tf.compat.v1.layers.dense(
      features['x'], 1, kernel_initializer=tf.compat.v1.zeros_initializer(),
      name='linear')
  predictions = {'probabilities': tf.sigmoid(logits)}
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions=predictions)
  loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(
      mode, predictions=predictions, loss=loss, train_op=train_op,
      eval_metric_ops={'accuracy': tf.compat.v1.metrics.accuracy(
          labels, tf.cast(logits > 0, tf.int64))})


# -- the libraries ----------------------------------------------------------

def _wrapper_library():
  from tensorflow_estimator.python.estimator import estimator  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator import model_fn as model_fn_lib  # pylint: disable=g-import-not-at-top

  class MonitoredEstimator(estimator.Estimator):
    """Adds a 'mean_probability' metric and a 'label' prediction."""

    def __init__(self, model_fn, model_dir=None, config=None):
      self.modes = []

      def wrapped(features, labels, mode):
        self.modes.append(mode)
        spec = model_fn(features, labels, mode)
        predictions = dict(spec.predictions,
                           label=tf.cast(spec.predictions['probabilities'] >
                                         0.5, tf.int64))
        metrics = dict(spec.eval_metric_ops or {})
        if mode == model_fn_lib.ModeKeys.EVAL:
          metrics['mean_probability'] = tf.compat.v1.metrics.mean(
              spec.predictions['probabilities'])
        return spec._replace(predictions=predictions,
                             eval_metric_ops=metrics)

      super().__init__(model_fn=wrapped, model_dir=model_dir, config=config)

  return MonitoredEstimator


def _override_library():
  from tensorflow_estimator.python.estimator import estimator  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.tpu import tpu_estimator  # pylint: disable=g-import-not-at-top

  class PatchedEstimator(estimator.Estimator):
    """Replaces the private check; adds a prediction in _call_model_fn and
    makes global_step a resource variable."""

    @staticmethod
    def _assert_members_are_not_overridden(est):
      est.checked = True

    def _call_model_fn(self, features, labels, mode, config):
      spec = super()._call_model_fn(features, labels, mode, config)
      predictions = dict(spec.predictions, logit_sign=tf.sign(
          spec.predictions['probabilities'] - 0.5))
      return spec._replace(predictions=predictions)

    def _create_global_step(self, graph):
      return tpu_estimator._create_global_step(graph)  # pylint: disable=protected-access

  return PatchedEstimator


def _canned_library():
  from tensorflow_estimator.python.estimator import estimator  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import dnn  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import head as head_lib  # pylint: disable=g-import-not-at-top

  class TinyDNNClassifier(estimator.Estimator):
    """A binary DNN classifier from the module-level helpers."""

    def __init__(self, hidden_units, feature_columns, model_dir=None,
                 config=None, warm_start_from=None):
      config = estimator.maybe_overwrite_model_dir_and_session_config(
          config, model_dir)
      head = head_lib._binary_logistic_or_multi_class_head(  # pylint: disable=protected-access
          2, None, None, tf.compat.v1.losses.Reduction.SUM)

      def _model_fn(features, labels, mode, config):
        return dnn._dnn_model_fn(  # pylint: disable=protected-access
            features=features, labels=labels, mode=mode, head=head,
            hidden_units=hidden_units, feature_columns=tuple(feature_columns),
            optimizer='Adagrad', config=config)

      super().__init__(model_fn=_model_fn, config=config,
                       warm_start_from=warm_start_from)

  return TinyDNNClassifier


# -- what a user observes ---------------------------------------------------

def _rounded(value):
  return float(np.round(float(value), 6))


def _plain(value):
  """A prediction's array as JSON (floats to 6 decimals, bytes decoded)."""
  array = np.asarray(value)
  if array.dtype.kind == 'f':
    return array.round(6).tolist()
  if array.dtype.kind in 'SO':
    return [v.decode() if isinstance(v, bytes) else v
            for v in array.reshape(-1).tolist()]
  return array.tolist()


def _observe(estimator, predict_keys=None):
  metrics = estimator.evaluate(_eval_input_fn)
  predictions = list(estimator.predict(_predict_input_fn,
                                       predict_keys=predict_keys))
  return {
      'metrics': {k: _rounded(v) for k, v in sorted(metrics.items())},
      'predictions': [{k: _plain(v) for k, v in sorted(p.items())}
                      for p in predictions],
      'variables': sorted(estimator.get_variable_names()),
  }


def _config(model_dir=None):
  return tf.compat.v1.estimator.RunConfig(
      model_dir=model_dir, tf_random_seed=3, save_checkpoints_steps=5)


def _write_checkpoint(path, shapes):
  """A TF1 checkpoint at `path` with deterministic values for `shapes`."""
  values = np.random.RandomState(0)
  with tf.Graph().as_default():
    variables = [tf.compat.v1.get_variable(
        name, initializer=values.uniform(-0.5, 0.5, shape).astype(np.float32))
                 for name, shape in sorted(shapes.items())]
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      tf.compat.v1.train.Saver(variables).save(session, path)


def run(case, workdir=None):
  """What a user observes of library `case` (see the module docstring)."""
  workdir = workdir or tempfile.mkdtemp()
  if case == 'wrapper':
    estimator = _wrapper_library()(_linear_model_fn, config=_config(
        os.path.join(workdir, 'm')))
    estimator.train(_input_fn, steps=4)
    result = _observe(estimator)
    result['modes'] = estimator.modes
    return result
  if case == 'override':
    estimator = _override_library()(_linear_model_fn, config=_config(
        os.path.join(workdir, 'm')))
    estimator.train(_input_fn, steps=4)
    result = _observe(estimator, predict_keys=['logit_sign'])
    result['checked'] = estimator.checked
    result['global_step'] = int(estimator.get_variable_value('global_step'))
    return result
  columns = [tf.feature_column.numeric_column('x', shape=(2,))]
  library = _canned_library()
  probe = library([3], columns, config=_config(os.path.join(workdir, 'p')))
  probe.train(_input_fn, steps=1)
  shapes = {n: s for n, s in tf.train.list_variables(probe.model_dir)
            if re.match(r'dnn/(hiddenlayer_\d+|logits)/(kernel|bias)$', n)}
  _write_checkpoint(os.path.join(workdir, 'init', 'model.ckpt'), shapes)
  estimator = library(
      [3], columns, config=_config(os.path.join(workdir, 'm')),
      warm_start_from=tf.estimator.WarmStartSettings(
          os.path.join(workdir, 'init'), vars_to_warm_start=list(shapes)))
  estimator.train(_input_fn, steps=4)
  result = _observe(estimator)
  result['warm_started'] = sorted(shapes)
  return result


def main():
  with open(GOLDEN, 'w', encoding='utf-8') as f:
    json.dump({'tensorflow': tf.__version__,
               'results': {case: run(case) for case in CASES}}, f, indent=1,
              sort_keys=True)
    f.write('\n')
  print(f'wrote {GOLDEN}')


if __name__ == '__main__':
  sys.exit(main())
