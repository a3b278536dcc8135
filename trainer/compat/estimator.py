"""Stand-ins for the Estimator names a model_fn uses, on TF without Estimator.

From TF 2.16 on `tf.estimator` is gone, but legacy model_fns still say
`tf.estimator.ModeKeys.TRAIN` and return
`tf.compat.v1.estimator.tpu.TPUEstimatorSpec(...)`. `install()` provides
exactly those names (mode keys and spec types, not Estimator itself) so such
model_fns run unmodified under the tf2 runner. Where Estimator exists it
changes nothing.
"""

import collections
import importlib
import types

from absl import logging
import tensorflow as tf


class ModeKeys:
  """The values of tf.estimator.ModeKeys."""
  TRAIN = 'train'
  EVAL = 'eval'
  PREDICT = 'infer'


_TPU_SPEC_FIELDS = ('mode', 'predictions', 'loss', 'train_op', 'eval_metrics',
                    'export_outputs', 'scaffold_fn', 'host_call',
                    'training_hooks', 'evaluation_hooks', 'prediction_hooks')
_SPEC_FIELDS = ('mode', 'predictions', 'loss', 'train_op', 'eval_metric_ops',
                'export_outputs', 'training_chief_hooks', 'training_hooks',
                'scaffold', 'evaluation_hooks', 'prediction_hooks')


class TPUEstimatorSpec(
    collections.namedtuple('TPUEstimatorSpec', _TPU_SPEC_FIELDS)):
  """What a TPUEstimator model_fn returns; every field but mode optional."""

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metrics=None, export_outputs=None, scaffold_fn=None,
              host_call=None, training_hooks=None, evaluation_hooks=None,
              prediction_hooks=None):
    if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
      raise ValueError(f'TPUEstimatorSpec: mode must be one of train, eval, '
                       f'infer; got {mode!r}.')
    return super().__new__(cls, mode, predictions, loss, train_op,
                           eval_metrics, export_outputs, scaffold_fn,
                           host_call, training_hooks, evaluation_hooks,
                           prediction_hooks)


class EstimatorSpec(collections.namedtuple('EstimatorSpec', _SPEC_FIELDS)):
  """What an Estimator model_fn returns; every field but mode optional."""

  def __new__(cls, mode, predictions=None, loss=None, train_op=None,
              eval_metric_ops=None, export_outputs=None,
              training_chief_hooks=None, training_hooks=None, scaffold=None,
              evaluation_hooks=None, prediction_hooks=None):
    if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
      raise ValueError(f'EstimatorSpec: mode must be one of train, eval, '
                       f'infer; got {mode!r}.')
    return super().__new__(cls, mode, predictions, loss, train_op,
                           eval_metric_ops, export_outputs,
                           training_chief_hooks, training_hooks, scaffold,
                           evaluation_hooks, prediction_hooks)


class ServingInputReceiver(collections.namedtuple(
    'ServingInputReceiver',
    ('features', 'receiver_tensors', 'receiver_tensors_alternatives'))):
  """What a serving_input_receiver_fn returns (features, receiver tensors)."""

  def __new__(cls, features, receiver_tensors,
              receiver_tensors_alternatives=None):
    if not isinstance(features, dict):  # As Estimator's: a lone tensor
      features = {'feature': features}  # is named 'feature'.
    return super().__new__(cls, features, receiver_tensors,
                           receiver_tensors_alternatives)


class TensorServingInputReceiver(collections.namedtuple(
    'TensorServingInputReceiver',
    ('features', 'receiver_tensors', 'receiver_tensors_alternatives'))):
  """A receiver whose features reach the model_fn as one tensor."""

  def __new__(cls, features, receiver_tensors,
              receiver_tensors_alternatives=None):
    return super().__new__(cls, features, receiver_tensors,
                           receiver_tensors_alternatives)


def has_estimator():
  """True when this TensorFlow ships the real TPUEstimator (not stand-ins)."""
  try:
    return hasattr(tf.compat.v1.estimator.tpu, 'TPUEstimator')
  except AttributeError:
    return False


def install():
  """Makes tf.estimator.{ModeKeys,EstimatorSpec} and
  tf.compat.v1.estimator.{ModeKeys,EstimatorSpec,tpu.TPUEstimatorSpec} exist.

  Returns True if stand-ins were installed, False if Estimator is present.
  Idempotent; call it before importing model code.
  """
  # tf.compat.v1 is loaded lazily: a later import (tf-keras does one) would
  # replace an unloaded placeholder, and with it the names set here.
  importlib.import_module('tensorflow.compat.v1')
  if getattr(tf.compat.v1, 'estimator', None) is not None:
    return False
  estimator = types.ModuleType('tensorflow.estimator')
  estimator.__doc__ = 'Stand-in: Estimator mode keys and spec types only.'
  estimator.ModeKeys = ModeKeys
  estimator.EstimatorSpec = EstimatorSpec
  estimator.tpu = types.SimpleNamespace(TPUEstimatorSpec=TPUEstimatorSpec)
  from tensorflow.python.saved_model.model_utils import export_output  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  estimator.export = types.SimpleNamespace(
      ServingInputReceiver=ServingInputReceiver,
      TensorServingInputReceiver=TensorServingInputReceiver,
      PredictOutput=export_output.PredictOutput,
      ClassificationOutput=export_output.ClassificationOutput,
      RegressionOutput=export_output.RegressionOutput)
  tf.estimator = estimator
  tf.compat.v1.estimator = estimator
  logging.info('TensorFlow %s has no tf.estimator: installed stand-ins for '
               'ModeKeys, EstimatorSpec and TPUEstimatorSpec.', tf.__version__)
  return True
