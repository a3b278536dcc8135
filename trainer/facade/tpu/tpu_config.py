"""tf.compat.v1.estimator.tpu's RunConfig, TPUConfig and InputPipelineConfig
of the facade (tensorflow_estimator's tpu/tpu_config.py).

The constructor arguments, defaults and validation of tensorflow_estimator
2.15's; the TPU RunConfig is the facade's RunConfig (run_config.py) plus TPU
placement.
"""

import collections

import tensorflow as tf

from trainer.facade import run_config
from trainer.facade.tpu import util


class InputPipelineConfig:
  """How TPUEstimator calls input_fn (the values of TPUConfig)."""
  PER_SHARD_V1 = 1
  PER_HOST_V1 = 2
  PER_HOST_V2 = 3
  BROADCAST = 4
  SLICED = 5


def _get_tpu_job_name_from_tf_config():
  """TF_CONFIG's service.tpu_worker_job_name, else None."""
  service = run_config.tf_config_from_env().get('service') or {}
  tpu_job_name = service.get('tpu_worker_job_name') if isinstance(
      service, dict) else None
  if tpu_job_name:
    tf.compat.v1.logging.info('Load TPU job name from TF_CONFIG: %s',
                              tpu_job_name)
  return tpu_job_name


_TPU_CONFIG_FIELDS = (
    'iterations_per_loop', 'num_shards', 'num_cores_per_replica',
    'per_host_input_for_training', 'tpu_job_name',
    'initial_infeed_sleep_secs', 'input_partition_dims',
    'eval_training_input_configuration',
    'experimental_host_call_every_n_steps',
    'experimental_allow_per_host_v2_parallel_get_next',
    'experimental_feed_hook')
_CORES_PER_REPLICA = (1, 2, 4, 8, 16, 32, 64, 128)


class TPUConfig(collections.namedtuple('TPUConfig', _TPU_CONFIG_FIELDS)):
  """tf.compat.v1.estimator.tpu.TPUConfig, with TPUEstimator's defaults and
  checks (a time-based iterations_per_loop is accepted here; TPUEstimator
  refuses it before training)."""

  def __new__(cls, iterations_per_loop=2, num_shards=None,
              num_cores_per_replica=None, per_host_input_for_training=True,
              tpu_job_name=None, initial_infeed_sleep_secs=None,
              input_partition_dims=None,
              eval_training_input_configuration=(
                  InputPipelineConfig.PER_HOST_V1),
              experimental_host_call_every_n_steps=1,
              experimental_allow_per_host_v2_parallel_get_next=False,
              experimental_feed_hook=None):
    util.parse_iterations_per_loop(iterations_per_loop)
    if num_shards is not None:
      util.check_positive_integer(num_shards, 'TPUConfig num_shards')
    if input_partition_dims is not None:
      if len(input_partition_dims) not in (1, 2):
        raise ValueError('input_partition_dims must be a list/tuple with one '
                         'or two elements.')
      if per_host_input_for_training is not InputPipelineConfig.PER_HOST_V2:
        raise ValueError(
            'input_partition_dims is only supported in PER_HOST_V2 mode.')
      if num_cores_per_replica is None:
        raise ValueError(
            'input_partition_dims requires setting num_cores_per_replica.')
    if (num_cores_per_replica is not None and
        num_cores_per_replica not in _CORES_PER_REPLICA):
      raise ValueError('num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, '
                       f'128; got {num_cores_per_replica}')
    if eval_training_input_configuration not in (
        InputPipelineConfig.PER_HOST_V1, InputPipelineConfig.SLICED):
      raise ValueError('eval_training_input_configuration must be PER_HOST_V1 '
                       f'or SLICED; got {eval_training_input_configuration}')
    if per_host_input_for_training is False:
      per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
    elif per_host_input_for_training is True:
      per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
    if initial_infeed_sleep_secs:
      util.check_positive_integer(initial_infeed_sleep_secs,
                                  'TPUConfig initial_infeed_sleep_secs')
    if not tpu_job_name:
      tpu_job_name = _get_tpu_job_name_from_tf_config()
    return super().__new__(
        cls, iterations_per_loop, num_shards, num_cores_per_replica,
        per_host_input_for_training, tpu_job_name, initial_infeed_sleep_secs,
        input_partition_dims, eval_training_input_configuration,
        experimental_host_call_every_n_steps,
        experimental_allow_per_host_v2_parallel_get_next,
        experimental_feed_hook)


class TPURunConfig(run_config.RunConfig):
  """tf.compat.v1.estimator.tpu.RunConfig: RunConfig plus TPU placement."""

  def __init__(self, tpu_config=None, evaluation_master=None, master=None,
               cluster=None, **kwargs):
    super().__init__(**kwargs)
    self._tpu_config = tpu_config or TPUConfig()
    self._cluster = cluster
    if master is not None:
      if cluster is not None:
        raise ValueError('Both master and cluster are set.')
      self._master = master
    elif cluster:
      self._master = cluster.master()
    if evaluation_master is not None:
      self._evaluation_master = evaluation_master
    elif (not self._evaluation_master and
          self.task_type != run_config.TaskType.EVALUATOR):
      self._evaluation_master = self._master
    if cluster:
      self._cluster_spec = cluster.cluster_spec()
      if self._session_config is None:
        self._session_config = tf.compat.v1.ConfigProto(
            allow_soft_placement=True, isolate_session_state=True)
      if self._session_config.HasField('cluster_def'):
        raise ValueError('You cannot provide a ClusterResolver and '
                         'session_config.cluster_def.')
      if self._cluster_spec:
        self._session_config.cluster_def.CopyFrom(
            self._cluster_spec.as_cluster_def())

  def _default_session_config(self):
    """TPU configs keep the session_config given (none by default)."""

  tpu_config = property(lambda self: self._tpu_config)
  cluster = property(lambda self: self._cluster)

  def replace(self, **kwargs):
    tpu_config = kwargs.pop('tpu_config', None)
    new = super().replace(**kwargs)
    if tpu_config is not None:
      new._tpu_config = tpu_config  # pylint: disable=protected-access
    return new


# tensorflow_estimator's name of the TPU RunConfig (tf.compat.v1.estimator.
# tpu.RunConfig).
RunConfig = TPURunConfig
