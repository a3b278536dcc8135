"""TPUEstimator's own checks on a TPU, in its order and with its errors.

With use_tpu=True, tensorflow_estimator 2.15's TPUEstimator first reads the
TPU system's metadata (cores, hosts, cores per host) in each call, then
checks, before it builds or runs anything on the TPU:
  train:    the configuration against the system (TPUContext.validate:
            cores found, TPUConfig.num_shards, num_cores_per_replica, the
            train batch divisible by the replicas), then that steps or
            max_steps is set and each a positive int (`check_train_steps`);
  evaluate: the configuration (eval_batch_size set and divisible, one host
            unless BROADCAST or PER_HOST_V2), then `steps` a positive int;
            with eval_on_tpu=False it evaluates on the CPU, unchecked;
  predict:  that input_fn takes `params`, then the configuration
            (predict_batch_size set and divisible, one host unless
            BROADCAST or PER_HOST_V2 with one replica);
  model_fn: its features and labels of static shape (`check_features`),
            `params` in its signature, and of what it returns
            (`check_spec`): in training no EstimatorSpec.training_chief_hooks,
            in evaluation and prediction a TPUEstimatorSpec, with static
            predictions.
The facade's TPUEstimator calls these where the reference checks, on the
metadata of the cluster's TPU (`TPUSystem`), so a mistake fails as it did on
TF 2.15 before anything is compiled for the TPU.
"""

import dataclasses
from typing import Any

import tensorflow as tf

from trainer.api import specs
from trainer.facade.tpu import tpu_config as tpu_config_lib
from trainer.facade.tpu import util

ModeKeys = specs.ModeKeys
_PIPELINE = tpu_config_lib.InputPipelineConfig


@dataclasses.dataclass(frozen=True)
class TPUSystem:
  """What TPUEstimator reads of the TPU system's metadata."""
  num_cores: int
  num_hosts: int
  num_of_cores_per_host: int
  devices: Any = ()

  @classmethod
  def of(cls, metadata):
    """From a tf.tpu.experimental.TPUSystemMetadata."""
    return cls(metadata.num_cores, metadata.num_hosts,
               metadata.num_of_cores_per_host, metadata.devices)


class TPUContext:
  """A TPUEstimator's configuration checked against a TPUSystem (as
  tensorflow_estimator's _InternalTPUContext)."""

  def __init__(self, config, train_batch_size, eval_batch_size,
               predict_batch_size):
    self._config = config
    self._tpu_config = config.tpu_config
    self._batch_sizes = {ModeKeys.TRAIN: train_batch_size,
                         ModeKeys.EVAL: eval_batch_size,
                         ModeKeys.PREDICT: predict_batch_size}

  def master(self, mode):
    """The master the metadata of `mode` comes from (Estimator's)."""
    if mode == ModeKeys.EVAL:
      return self._config.evaluation_master
    return self._config.master

  def _broadcast(self, mode):
    pipeline = self._tpu_config.per_host_input_for_training
    return pipeline is _PIPELINE.BROADCAST or (
        mode != ModeKeys.TRAIN and
        self._tpu_config.eval_training_input_configuration is
        _PIPELINE.SLICED)

  def _per_host_v2(self):
    return (self._tpu_config.per_host_input_for_training is
            _PIPELINE.PER_HOST_V2)

  def num_replicas(self, system):
    """Replicas of the system: its cores, over num_cores_per_replica."""
    cores = system.num_cores
    per_replica = self._tpu_config.num_cores_per_replica
    if not per_replica:
      return cores
    if per_replica > cores:
      raise ValueError(
          'The num of cores required by the model parallelism, specified by '
          'TPUConfig.num_cores_per_replica, is larger than the total num of '
          'TPU cores in the system. num_cores_per_replica: '
          f'{per_replica}, num cores in the system: {cores}')
    if cores % per_replica != 0:
      raise RuntimeError(
          f'The num of cores in the system ({cores}) is not divisible by the '
          f'num of cores ({per_replica}) required by the model parallelism, '
          'specified by TPUConfig.num_cores_per_replica. This should never '
          'happen!')
    return cores // per_replica

  def validate(self, mode, system):
    """Raises as TPUEstimator does for a configuration `system` cannot run
    in `mode`."""
    num_replicas = self.num_replicas(system)
    num_hosts = system.num_hosts
    if not system.num_cores:
      raise RuntimeError(
          'Cannot find any TPU cores in the system. Please double check '
          'Tensorflow master address and TPU worker(s). Available devices '
          f'are {system.devices}.')
    num_shards = self._tpu_config.num_shards
    if num_shards and num_shards != num_replicas:
      raise ValueError(
          'TPUConfig.num_shards is not set correctly. According to TPU '
          f'system metadata for Tensorflow master ({self.master(mode)}): '
          f'num_replicas should be ({num_replicas}), got ({num_shards}). For '
          'non-model-parallelism, num_replicas should be the total num of '
          'TPU cores in the system. For model-parallelism, the total number '
          'of TPU cores should be num_cores_per_replica * num_replicas. '
          'Please set it accordingly or leave it as `None`')
    per_replica = self._tpu_config.num_cores_per_replica
    if per_replica and not self._per_host_v2() and (
        per_replica > system.num_of_cores_per_host):
      raise ValueError(
          'Except the PER_HOST_V2 mode, the num of cores required by model '
          'parallelism specified by TPUConfig.num_cores_per_replica should '
          'be less than or equal to the num_cores_per_host. '
          f'num_cores_per_replica: {per_replica}, num_cores_per_host: '
          f'{system.num_of_cores_per_host}')
    batch = self._batch_sizes[mode]
    broadcast = self._broadcast(mode)
    what = {ModeKeys.TRAIN: 'train', ModeKeys.EVAL: 'eval',
            ModeKeys.PREDICT: 'predict'}[mode]
    if mode != ModeKeys.TRAIN and batch is None:
      method = 'evaluate' if mode == ModeKeys.EVAL else 'predict'
      raise ValueError(
          f'{what}_batch_size in TPUEstimator constructor cannot be `None` '
          f'if .{method} is running on TPU.')
    if batch % num_replicas != 0 and not broadcast:
      raise ValueError(f'{what} batch size {batch} must be divisible by '
                       f'number of replicas {num_replicas}')
    pipeline = self._tpu_config.per_host_input_for_training
    if mode == ModeKeys.EVAL and num_hosts != 1 and not broadcast and (
        not self._per_host_v2()):
      raise ValueError(
          'TPUEstimator.evaluate is only supported under three conditions: '
          '1. num_hosts=1; 2. BROADCAST mode; 3. PER_HOST_V2 mode. '
          f'mode: {pipeline}; num_hosts: {num_hosts}; '
          f'num_replicas=1:{num_replicas}')
    if mode == ModeKeys.EVAL and num_hosts > 1 and self._per_host_v2():
      tf.compat.v1.logging.warn('Running TPUEstimator.evaluate for input '
                                'mode PER_HOST_V2 and num_hosts %d',
                                num_hosts)
    if mode == ModeKeys.PREDICT and num_hosts != 1 and not broadcast and (
        not (num_replicas == 1 and self._per_host_v2())):
      raise ValueError(
          'TPUEstimator.predict is only supported under three conditions: '
          '1. num_hosts=1; 2. BROADCAST mode; 3. PER_HOST_V2 mode with '
          f'num_replicas=1. mode: {pipeline}; num_hosts: {num_hosts}; '
          f'num_replicas=1:{num_replicas}')


def check_train_steps(steps, max_steps):
  """TPU training's steps: one of them set, each a positive int."""
  if steps is None and max_steps is None:
    raise ValueError('For TPU training, one of `steps` or `max_steps` must '
                     'be set. Cannot be both `None`.')
  if steps is not None:
    util.check_positive_integer(steps, 'Train steps')
  if max_steps is not None:
    util.check_positive_integer(max_steps, 'Train max_steps')


def check_eval_steps(steps):
  """TPU evaluation's steps: set, a positive int."""
  if steps is None:
    raise ValueError('Evaluate `steps` must be set on TPU. Cannot be `None`.')
  util.check_positive_integer(steps, 'Eval steps')


def check_input_fn_args(input_fn, args):
  """input_fn must take `params` (TPUEstimator passes the batch size)."""
  if 'params' not in args:
    raise ValueError(
        f'input_fn ({input_fn}) does not include params argument, required '
        'by TPUEstimator to pass batch size as params["batch_size"]')


def check_model_fn_args(model_fn, args):
  """model_fn must take `params` (TPUEstimator passes the batch size)."""
  if 'params' not in args:
    raise ValueError(
        f'model_fn ({model_fn}) does not include params argument, required '
        "by TPUEstimator to pass batch size as params['batch_size']")


def check_features(features, labels, pipeline):
  """Raises for a feature or label without a static shape: under the
  default per-host input (PER_HOST_V1) TPUEstimator's infeed says its
  batch cannot be split over the cores; otherwise its model_fn check."""
  for name, value in (('features', features), ('labels', labels)):
    if value is None:
      continue
    for tensor in tf.nest.flatten(value):
      shape = tensor.shape
      if shape.is_fully_defined():
        continue
      if pipeline is _PIPELINE.PER_HOST_V1 and (
          shape.rank is not None and shape.rank > 0 and shape[0] is None):
        raise ValueError(
            f'Shape {shape.as_list()} must have a fixed size for dimension 0 '
            'that is known at construction time.')
      raise ValueError(
          f'The {name} to the model returned by input_fn must have static '
          f'shape. Tensor: {tensor}')


def check_spec(spec, mode):
  """What a model_fn returns on TPU: in training a TPUEstimatorSpec, or an
  EstimatorSpec without training_chief_hooks (its scaffold ignored, with a
  warning); in evaluation and prediction a TPUEstimatorSpec, whose
  predictions (PREDICT) have a static first dimension."""
  tpu_spec = hasattr(spec, 'scaffold_fn')
  if mode != ModeKeys.TRAIN:
    if not tpu_spec:
      what = 'evaluation' if mode == ModeKeys.EVAL else 'prediction'
      raise RuntimeError(
          f'estimator_spec used by TPU {what} must have type'
          f'`TPUEstimatorSpec`. Got {type(spec)}')
    if mode == ModeKeys.PREDICT:
      check_predictions(spec.predictions)
    return
  if tpu_spec:
    return
  if spec.training_chief_hooks:
    raise ValueError(
        'training_chief_hooks returned by EstimatorSpec is not supported in '
        'TPUEstimator.If you want to pass training hooks, please pass via '
        'training_hooks.')
  if spec.scaffold:
    tf.compat.v1.logging.warn('EstimatorSpec.Scaffold is ignored by TPU '
                              'train/eval. Please use TPUEstimatorSpec.')


def check_predictions(predictions):
  """TPUEstimatorSpec.predictions on TPU: a dict of tensors whose first
  dimension is static."""
  if not isinstance(predictions, dict):
    raise TypeError('TPUEstimatorSpec.predictions must be dict of Tensors.')
  for key, tensor in predictions.items():
    if tensor.shape.dims[0].value is None:
      raise ValueError(
          f'The tensor with key ({key}) in TPUEstimatorSpec.predictions has '
          f'dynamic shape (should be static). Tensor: {tensor}')
