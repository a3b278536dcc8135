"""RunConfig, tpu.RunConfig, TPUConfig and InputPipelineConfig of the facade.

Same constructor arguments, defaults, checks and properties as Estimator's
(TF_CONFIG gives cluster_spec, task_type, task_id, is_chief, ...). They only
hold configuration; trainer/legacy/backend.py maps them onto the tf2 runner.
"""

import collections
import copy
import json
import os

import tensorflow as tf

_USE_DEFAULT = object()
_DEFAULT_SAVE_SECS = 600


class TaskType:
  """Task types of TF_CONFIG, as tf.estimator.RunConfig names them."""
  MASTER = 'master'
  PS = 'ps'
  WORKER = 'worker'
  CHIEF = 'chief'
  EVALUATOR = 'evaluator'


def _tf_config():
  raw = os.environ.get('TF_CONFIG', '')
  if not raw:
    return {}
  try:
    return json.loads(raw)
  except ValueError as e:
    raise ValueError(f'TF_CONFIG is not valid JSON: {e}') from e


def _check_positive(name, value, allow_zero=False):
  if value is None:
    return
  if not isinstance(value, int) or value < 0 or (value == 0 and
                                                 not allow_zero):
    raise ValueError(f'RunConfig: {name} must be a positive integer, got '
                     f'{value!r}.')


class RunConfig:
  """tf.estimator.RunConfig: where and how often an Estimator works."""

  def __init__(self, model_dir=None, tf_random_seed=None,
               save_summary_steps=100, save_checkpoints_steps=_USE_DEFAULT,
               save_checkpoints_secs=_USE_DEFAULT, session_config=None,
               keep_checkpoint_max=5, keep_checkpoint_every_n_hours=10000,
               log_step_count_steps=100, train_distribute=None,
               device_fn=None, protocol=None, eval_distribute=None,
               experimental_distribute=None,
               experimental_max_worker_delay_secs=None,
               session_creation_timeout_secs=7200,
               checkpoint_save_graph_def=True):
    if (save_checkpoints_steps not in (None, _USE_DEFAULT) and
        save_checkpoints_secs not in (None, _USE_DEFAULT)):
      raise ValueError('RunConfig: can not specify both save_checkpoints_steps'
                       ' and save_checkpoints_secs.')
    if save_checkpoints_steps is _USE_DEFAULT:
      save_checkpoints_steps = None
      if save_checkpoints_secs is _USE_DEFAULT:
        save_checkpoints_secs = _DEFAULT_SAVE_SECS
    if save_checkpoints_secs is _USE_DEFAULT:
      save_checkpoints_secs = None
    _check_positive('save_checkpoints_steps', save_checkpoints_steps)
    _check_positive('save_checkpoints_secs', save_checkpoints_secs)
    _check_positive('save_summary_steps', save_summary_steps, allow_zero=True)
    _check_positive('keep_checkpoint_max', keep_checkpoint_max,
                    allow_zero=True)
    _check_positive('log_step_count_steps', log_step_count_steps)
    if experimental_distribute is not None:
      raise ValueError('RunConfig: experimental_distribute is not supported; '
                       'use train_distribute and eval_distribute.')
    self._model_dir = (os.fspath(model_dir) if model_dir is not None
                       else None)
    self._tf_random_seed = tf_random_seed
    self._save_summary_steps = save_summary_steps
    self._save_checkpoints_steps = save_checkpoints_steps
    self._save_checkpoints_secs = save_checkpoints_secs
    self._session_config = session_config
    self._keep_checkpoint_max = keep_checkpoint_max
    self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
    self._log_step_count_steps = log_step_count_steps
    self._train_distribute = train_distribute
    self._eval_distribute = eval_distribute
    self._device_fn = device_fn
    self._protocol = protocol
    self._experimental_max_worker_delay_secs = (
        experimental_max_worker_delay_secs)
    self._session_creation_timeout_secs = session_creation_timeout_secs
    self._checkpoint_save_graph_def = checkpoint_save_graph_def
    self._init_cluster(_tf_config())

  def _init_cluster(self, tf_config):
    cluster = tf_config.get('cluster') or {}
    task = tf_config.get('task') or {}
    self._cluster_spec = tf.train.ClusterSpec(cluster)
    self._task_type = task.get('type') if cluster else None
    self._task_id = int(task.get('index', 0)) if cluster else 0
    self._service = tf_config.get('service')
    self._num_ps_replicas = len(cluster.get(TaskType.PS, []))
    self._num_worker_replicas = sum(
        len(cluster.get(kind, []))
        for kind in (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER)) or 1
    if not cluster:
      self._is_chief = True
      self._master = ''
    else:
      self._is_chief = self._task_type in (TaskType.CHIEF, TaskType.MASTER)
      if not (cluster.get(TaskType.CHIEF) or cluster.get(TaskType.MASTER)):
        self._is_chief = (self._task_type == TaskType.WORKER and
                          self._task_id == 0)
      address = cluster.get(self._task_type, [None])[self._task_id] if (
          self._task_type in cluster) else None
      self._master = f'grpc://{address}' if address else ''
    self._evaluation_master = tf_config.get('session_master', '') if (
        self._task_type == TaskType.EVALUATOR) else ''
    self._global_id_in_cluster = 0 if not cluster else self._global_id(
        cluster)

  def _global_id(self, cluster):
    """Index of this task over chief, master, worker (Estimator's order)."""
    index = 0
    for kind in (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER):
      if kind == self._task_type:
        return index + self._task_id
      index += len(cluster.get(kind, []))
    return None

  # -- properties (Estimator's names) -------------------------------------

  model_dir = property(lambda self: self._model_dir)
  tf_random_seed = property(lambda self: self._tf_random_seed)
  save_summary_steps = property(lambda self: self._save_summary_steps)
  save_checkpoints_steps = property(
      lambda self: self._save_checkpoints_steps)
  save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
  session_config = property(lambda self: self._session_config)
  keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
  keep_checkpoint_every_n_hours = property(
      lambda self: self._keep_checkpoint_every_n_hours)
  log_step_count_steps = property(lambda self: self._log_step_count_steps)
  train_distribute = property(lambda self: self._train_distribute)
  eval_distribute = property(lambda self: self._eval_distribute)
  device_fn = property(lambda self: self._device_fn)
  protocol = property(lambda self: self._protocol)
  experimental_max_worker_delay_secs = property(
      lambda self: self._experimental_max_worker_delay_secs)
  session_creation_timeout_secs = property(
      lambda self: self._session_creation_timeout_secs)
  checkpoint_save_graph_def = property(
      lambda self: self._checkpoint_save_graph_def)
  cluster_spec = property(lambda self: self._cluster_spec)
  task_type = property(lambda self: self._task_type)
  task_id = property(lambda self: self._task_id)
  is_chief = property(lambda self: self._is_chief)
  master = property(lambda self: self._master)
  evaluation_master = property(lambda self: self._evaluation_master)
  num_ps_replicas = property(lambda self: self._num_ps_replicas)
  num_worker_replicas = property(lambda self: self._num_worker_replicas)
  global_id_in_cluster = property(lambda self: self._global_id_in_cluster)
  service = property(lambda self: self._service)

  def replace(self, **kwargs):
    """A copy with the named constructor arguments replaced."""
    new = copy.copy(self)
    for name, value in kwargs.items():
      if not hasattr(new, f'_{name}') or name.startswith('_'):
        raise ValueError(f'RunConfig.replace: {name!r} is not a RunConfig '
                         'property that can be replaced.')
      setattr(new, f'_{name}', value)
    steps = 'save_checkpoints_steps' in kwargs
    secs = 'save_checkpoints_secs' in kwargs
    # pylint: disable=protected-access
    if steps and secs:
      if (new._save_checkpoints_steps is not None and
          new._save_checkpoints_secs is not None):
        raise ValueError('RunConfig: can not specify both '
                         'save_checkpoints_steps and save_checkpoints_secs.')
    elif steps and new._save_checkpoints_steps is not None:
      new._save_checkpoints_secs = None  # Setting one clears the other.
    elif secs and new._save_checkpoints_secs is not None:
      new._save_checkpoints_steps = None
    # pylint: enable=protected-access
    return new

  def __deepcopy__(self, memo):
    """A copy sharing strategies, resolvers and device_fn (not copyable)."""
    new = copy.copy(self)
    if self._session_config is not None:
      new._session_config = copy.deepcopy(self._session_config, memo)  # pylint: disable=protected-access
    return new

  def __repr__(self):
    fields = ', '.join(f'{k[1:]}={v!r}' for k, v in sorted(vars(self).items()))
    return f'{type(self).__name__}({fields})'


class InputPipelineConfig:
  """How TPUEstimator calls input_fn (the values of TPUConfig)."""
  PER_SHARD_V1 = 1
  PER_HOST_V1 = 2
  PER_HOST_V2 = 3
  BROADCAST = 4
  SLICED = 5


_TPU_CONFIG_FIELDS = (
    'iterations_per_loop', 'num_shards', 'num_cores_per_replica',
    'per_host_input_for_training', 'tpu_job_name',
    'initial_infeed_sleep_secs', 'input_partition_dims',
    'eval_training_input_configuration',
    'experimental_host_call_every_n_steps',
    'experimental_allow_per_host_v2_parallel_get_next',
    'experimental_feed_hook')


class TPUConfig(collections.namedtuple('TPUConfig', _TPU_CONFIG_FIELDS)):
  """tf.compat.v1.estimator.tpu.TPUConfig, with TPUEstimator's defaults."""

  def __new__(cls, iterations_per_loop=2, num_shards=None,
              num_cores_per_replica=None, per_host_input_for_training=True,
              tpu_job_name=None, initial_infeed_sleep_secs=None,
              input_partition_dims=None,
              eval_training_input_configuration=(
                  InputPipelineConfig.PER_HOST_V1),
              experimental_host_call_every_n_steps=1,
              experimental_allow_per_host_v2_parallel_get_next=False,
              experimental_feed_hook=None):
    if isinstance(iterations_per_loop, str):
      raise NotImplementedError(
          f'TPUConfig(iterations_per_loop={iterations_per_loop!r}): a time '
          'interval is not supported by the trainer.legacy facade; give a '
          'number of steps.')
    if not isinstance(iterations_per_loop, int) or iterations_per_loop <= 0:
      raise ValueError('TPUConfig: iterations_per_loop must be a positive '
                       f'integer, got {iterations_per_loop!r}.')
    if num_shards is not None and (not isinstance(num_shards, int) or
                                   num_shards <= 0):
      raise ValueError('TPUConfig: num_shards must be a positive integer, '
                       f'got {num_shards!r}.')
    if per_host_input_for_training is False:
      per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
    elif per_host_input_for_training is True:
      per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
    return super().__new__(
        cls, iterations_per_loop, num_shards, num_cores_per_replica,
        per_host_input_for_training, tpu_job_name, initial_infeed_sleep_secs,
        input_partition_dims, eval_training_input_configuration,
        experimental_host_call_every_n_steps,
        experimental_allow_per_host_v2_parallel_get_next,
        experimental_feed_hook)


class TPURunConfig(RunConfig):
  """tf.compat.v1.estimator.tpu.RunConfig: RunConfig plus TPU placement."""

  def __init__(self, tpu_config=None, evaluation_master=None, master=None,
               cluster=None, **kwargs):
    super().__init__(**kwargs)
    self._tpu_config = tpu_config or TPUConfig()
    self._cluster = cluster
    if master is not None:
      if cluster is not None:
        raise ValueError('tpu.RunConfig: both master and cluster are set.')
      self._master = master
    elif cluster:
      self._master = cluster.master()
    if evaluation_master is not None:
      self._evaluation_master = evaluation_master
    elif not self._evaluation_master and (
        self.task_type != TaskType.EVALUATOR):
      self._evaluation_master = self._master
    if cluster:
      self._cluster_spec = cluster.cluster_spec()
      if self._session_config is None:
        self._session_config = tf.compat.v1.ConfigProto(
            allow_soft_placement=True, isolate_session_state=True)

  tpu_config = property(lambda self: self._tpu_config)
  cluster = property(lambda self: self._cluster)

  def replace(self, **kwargs):
    tpu_config = kwargs.pop('tpu_config', None)
    new = super().replace(**kwargs)
    if tpu_config is not None:
      new._tpu_config = tpu_config  # pylint: disable=protected-access
    return new
