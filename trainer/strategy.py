"""Chooses the tf.distribute strategy of the tf2 runner.

  --tpu given            -> TPUStrategy (resolve with a deadline, connect,
                            initialize; same errors as the estimator runner)
  TF_CONFIG, >1 workers  -> MultiWorkerMirroredStrategy
  several local devices  -> MirroredStrategy (--num_cpu_devices N splits the
                            CPU into N logical devices)
  otherwise              -> the default (one-device) strategy
"""

import json
import os

from absl import logging
import tensorflow as tf

from trainer import tpu_cluster


def split_cpu(num_devices):
  """Splits the physical CPU into `num_devices` logical devices.

  Must run before TensorFlow initialises its devices; a later call with the
  same count is a no-op, a different count raises RuntimeError naming
  --num_cpu_devices.
  """
  if num_devices <= 1:
    return
  cpu = tf.config.list_physical_devices('CPU')[0]
  configs = [tf.config.LogicalDeviceConfiguration()] * num_devices
  try:
    tf.config.set_logical_device_configuration(cpu, configs)
  except RuntimeError as e:
    have = len(tf.config.list_logical_devices('CPU'))
    if have != num_devices:
      raise RuntimeError(
          f'--num_cpu_devices={num_devices}: TensorFlow already initialised '
          f'{have} CPU device(s) in this process: {e}') from e


def cluster_workers(tf_config=None):
  """Number of chief + worker tasks named by TF_CONFIG (0 without it)."""
  raw = os.environ.get('TF_CONFIG', '') if tf_config is None else tf_config
  if not raw:
    return 0
  try:
    cluster = json.loads(raw).get('cluster', {})
  except ValueError as e:
    raise ValueError(f'TF_CONFIG is not valid JSON: {e}') from e
  return len(cluster.get('chief', [])) + len(cluster.get('worker', []))


def make_strategy(params):
  """(strategy, kind) for params; kind names the choice for logs and tests."""
  if params['use_tpu']:
    resolver = tpu_cluster.resolve_tpu(params)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver), 'tpu'
  if cluster_workers() > 1:
    return tf.distribute.MultiWorkerMirroredStrategy(), 'multi_worker_mirrored'
  split_cpu(params.get('num_cpu_devices', 1))
  devices = tf.config.list_logical_devices('GPU') or tf.config.list_logical_devices('CPU')
  if len(devices) > 1:
    return (tf.distribute.MirroredStrategy([d.name for d in devices]),
            'mirrored')
  return tf.distribute.get_strategy(), 'default'


def supports_jit(kind):
  """Whether the replica step may be XLA-compiled under this strategy kind.

  TPUStrategy compiles anyway; MirroredStrategy over logical CPU devices
  fails under jit_compile (resources on CPU:1 accessed from CPU:0), and CPU
  collectives of MultiWorkerMirrored are not compiled either.
  """
  return kind == 'default'


def is_chief(strategy):
  """True on the task that writes checkpoints and summaries into model_dir."""
  resolver = getattr(strategy, 'cluster_resolver', None)
  if resolver is None or not resolver.task_type:
    return True
  if resolver.task_type == 'chief':
    return True
  has_chief = 'chief' in resolver.cluster_spec().as_dict()
  return resolver.task_type == 'worker' and resolver.task_id == 0 and (
      not has_chief)


def task_index(strategy):
  """This task's position among the workers (0 without a cluster)."""
  resolver = getattr(strategy, 'cluster_resolver', None)
  if resolver is None or resolver.task_id is None:
    return 0
  return int(resolver.task_id)
