"""RunConfig and TaskType of the facade (tf.estimator.RunConfig); the TPU
RunConfig, TPUConfig and InputPipelineConfig are in tpu/tpu_config.py.

The constructor arguments, defaults, validation (same exception types and
messages a program or test may match), TF_CONFIG parsing (cluster, task,
session_master, eval_session_master, model_dir, service) and properties of
tensorflow_estimator 2.15's. They only hold configuration;
trainer/facade/distributed/backend.py maps them onto the engines.
"""

import copy
import inspect
import json
import os

import tensorflow as tf

from trainer.engines.graph import program as program_lib

_USE_DEFAULT = object()
_DEFAULT_SAVE_SECS = 600
_LOCAL_MASTER = ''
_SAVE_CKPT_ERR = (
    '`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set.')
# What RunConfig.replace may change (the constructor's own arguments).
_REPLACEABLE = (
    'model_dir', 'tf_random_seed', 'save_summary_steps',
    'save_checkpoints_steps', 'save_checkpoints_secs', 'session_config',
    'keep_checkpoint_max', 'keep_checkpoint_every_n_hours',
    'log_step_count_steps', 'train_distribute', 'device_fn', 'protocol',
    'eval_distribute', 'experimental_distribute',
    'experimental_max_worker_delay_secs', 'session_creation_timeout_secs',
    'checkpoint_save_graph_def')


def get_default_session_config():
  """Estimator's ConfigProto when the RunConfig has none: soft placement,
  one meta-optimizer pass."""
  return program_lib.default_session_config()


def path_to_str(path):
  """A path-like's path as a string; anything else unchanged."""
  if hasattr(path, '__fspath__'):
    path = tf.compat.as_str_any(path.__fspath__())
  return path


# The Distribute Coordinator mode Estimator uses with a strategy on a cluster.
INDEPENDENT_WORKER = 'independent_worker'


class TaskType:
  """Task types of TF_CONFIG, as tf.estimator.RunConfig names them."""
  MASTER = 'master'
  PS = 'ps'
  WORKER = 'worker'
  CHIEF = 'chief'
  EVALUATOR = 'evaluator'


def tf_config_from_env():
  """TF_CONFIG as a dict ({} when unset); ValueError naming it if invalid."""
  raw = os.environ.get('TF_CONFIG', '')
  if not raw:
    return {}
  try:
    return json.loads(raw)
  except ValueError as e:
    raise ValueError(f'TF_CONFIG is not valid JSON: {e}') from e


def _model_dir(tf_config, model_dir):
  """The model_dir of the constructor and TF_CONFIG, which must agree."""
  if model_dir is not None:
    model_dir = (tf.compat.as_str_any(os.fspath(model_dir))
                 if hasattr(model_dir, '__fspath__') else model_dir)
  if model_dir == '':
    raise ValueError('model_dir should be non-empty.')
  from_env = tf_config.get('model_dir')
  if from_env == '':
    raise ValueError('model_dir in TF_CONFIG should be non-empty.')
  if from_env and model_dir and from_env != model_dir:
    raise ValueError(
        '`model_dir` provided in RunConfig construct, if set, must have the '
        f'same value as the model_dir in TF_CONFIG. model_dir: {model_dir}\n'
        f'TF_CONFIG["model_dir"]: {from_env}.\n')
  return model_dir or from_env


def _validated_task(cluster, task_env, chief_kind):
  """(task_type, task_id) of TF_CONFIG's task, checked against its cluster."""
  if chief_kind not in cluster.jobs:
    raise ValueError(f'If "cluster" is set in TF_CONFIG, it must have one '
                     f'"{chief_kind}" node.')
  if len(cluster.job_tasks(chief_kind)) > 1:
    raise ValueError(f'The "cluster" in TF_CONFIG must have only one '
                     f'"{chief_kind}" node.')
  task_type = task_env.get('type')
  task_id = task_env.get('index')
  if not task_type:
    raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
  if task_id is None:
    raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
  task_id = int(task_id)
  if task_id < 0:
    raise ValueError('Task index must be non-negative number.')
  if task_type == TaskType.EVALUATOR:  # Not part of the training cluster.
    return task_type, task_id
  if task_type not in cluster.jobs:
    raise ValueError(
        f'{task_type} is not a valid task_type in the cluster_spec:\n'
        f'{cluster}\n\nNote that these values may be coming from the '
        'TF_CONFIG environment variable.')
  if task_id >= len(cluster.job_tasks(task_type)):
    raise ValueError(
        f'{task_id} is not a valid task_id for task_type {task_type} in the '
        f'cluster_spec:\n{cluster}\n\nNote that these values may be coming '
        'from the TF_CONFIG environment variable.')
  return task_type, task_id


def _session_master(cluster, task_type, task_id, tf_config):
  """TF_CONFIG's session_master, else '' for a one-task cluster, else the
  task's own grpc address."""
  if 'session_master' in tf_config:
    return tf_config['session_master']
  jobs = cluster.jobs
  if len(jobs) == 1 and len(cluster.job_tasks(jobs[0])) == 1:
    return _LOCAL_MASTER
  return 'grpc://' + cluster.job_tasks(task_type)[task_id]


def _global_id(cluster, task_type, task_id, chief_kind):
  """The chief first, then the other task types alphabetically, ps last."""
  order = [chief_kind] + sorted(
      t for t in cluster.jobs if t not in (chief_kind, TaskType.PS))
  if TaskType.PS in cluster.jobs:
    order.append(TaskType.PS)
  offset = 0
  for kind in order:
    if kind == task_type:
      return offset + task_id
    offset += len(cluster.job_tasks(kind))
  raise ValueError(f'task_type {task_type!r} is not in the cluster {cluster}')


def _count(cluster, *kinds):
  jobs = cluster.as_dict()
  return sum(len(jobs.get(kind, [])) for kind in kinds)


def cluster_settings(tf_config):
  """The distributed properties RunConfig derives from TF_CONFIG: a dict of
  cluster_spec, task_type, task_id, master, evaluation_master, is_chief,
  num_ps_replicas, num_worker_replicas, global_id_in_cluster, service."""
  service = tf_config.get('service')
  if service is not None and not isinstance(service, dict):
    raise TypeError('If "service" is set in TF_CONFIG, it must be a dict. '
                    f'Given {type(service)}')
  cluster = tf.train.ClusterSpec(tf_config.get('cluster', {}))
  task_env = tf_config.get('task', {})
  settings = {'cluster_spec': cluster, 'service': service}
  if not cluster:
    task_type = task_env.get('type', TaskType.WORKER)
    task_id = int(task_env.get('index', 0))
    if task_type != TaskType.WORKER:
      raise ValueError(
          'If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
    if task_id != 0:
      raise ValueError(
          'If "cluster" is not set in TF_CONFIG, task index must be 0.')
    settings.update(
        task_type=task_type, task_id=task_id, global_id_in_cluster=0,
        master=tf_config.get('session_master', _LOCAL_MASTER),
        evaluation_master=tf_config.get('eval_session_master', _LOCAL_MASTER),
        is_chief=True, num_ps_replicas=0, num_worker_replicas=1)
    return settings
  chief_kind = (TaskType.MASTER if TaskType.MASTER in cluster.jobs
                else TaskType.CHIEF)
  if chief_kind == TaskType.MASTER and TaskType.CHIEF in cluster.jobs:
    raise ValueError('If `master` node exists in `cluster`, job `chief` is '
                     'not supported.')
  task_type, task_id = _validated_task(cluster, task_env, chief_kind)
  if task_type == TaskType.EVALUATOR and chief_kind == TaskType.MASTER:
    raise ValueError('If `master` node exists in `cluster`, task_type '
                     '`evaluator` is not supported.')
  evaluation_master = (tf_config.get('eval_session_master', _LOCAL_MASTER)
                       if task_type == TaskType.EVALUATOR else _LOCAL_MASTER)
  settings.update(task_type=task_type, task_id=task_id,
                  evaluation_master=evaluation_master,
                  is_chief=task_type == chief_kind)
  if task_type == TaskType.EVALUATOR:
    settings.update(cluster_spec=tf.train.ClusterSpec({}),
                    master=_LOCAL_MASTER, num_ps_replicas=0,
                    num_worker_replicas=0, global_id_in_cluster=None)
  else:
    settings.update(
        master=_session_master(cluster, task_type, task_id, tf_config),
        num_ps_replicas=_count(cluster, TaskType.PS),
        num_worker_replicas=_count(cluster, TaskType.WORKER, chief_kind),
        global_id_in_cluster=_global_id(cluster, task_type, task_id,
                                        chief_kind))
  return settings


def training_cluster(config):
  """(number of chief/master/worker tasks, number of ps tasks) of the cluster
  the program runs in: TF_CONFIG's, also when a distribution strategy makes
  RunConfig report the task as local (Estimator's distribute coordinator)."""
  spec = config.cluster_spec
  if not spec:
    return 1, 0
  return (_count(spec, TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER),
          _count(spec, TaskType.PS))


def _check(config):
  """Estimator's checks of the properties (ValueError with its messages)."""
  def check(name, ok, message):
    value = getattr(config, '_' + name)
    if value is not None and not ok(value):
      raise ValueError(message)

  def device_fn_ok(fn):
    if not callable(fn):
      return False
    try:
      names = set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
      return False
    return names == {'op'}

  check('model_dir', bool, 'model_dir should be non-empty')
  check('save_summary_steps', lambda v: v >= 0,
        'save_summary_steps should be >= 0')
  check('save_checkpoints_steps', lambda v: v >= 0,
        'save_checkpoints_steps should be >= 0')
  check('save_checkpoints_secs', lambda v: v >= 0,
        'save_checkpoints_secs should be >= 0')
  check('session_config',
        lambda v: isinstance(v, tf.compat.v1.ConfigProto),
        'session_config must be instance of ConfigProto')
  check('keep_checkpoint_max', lambda v: v >= 0,
        'keep_checkpoint_max should be >= 0')
  check('keep_checkpoint_every_n_hours', lambda v: v > 0,
        'keep_checkpoint_every_n_hours should be > 0')
  check('log_step_count_steps', lambda v: v > 0,
        'log_step_count_steps should be > 0')
  check('tf_random_seed', lambda v: isinstance(v, int),
        'tf_random_seed must be integer.')
  check('experimental_max_worker_delay_secs', lambda v: isinstance(v, int),
        'experimental_max_worker_delay_secs must be an integer if set.')
  check('session_creation_timeout_secs', lambda v: v > 0,
        'session_creation_timeout_secs should be > 0')
  check('device_fn', device_fn_ok,
        'device_fn must be callable with exactly one argument "op".')
  check('protocol', lambda v: v in (None, 'grpc', 'grpc+verbs'),
        'protocol should be grpc or grpc+verbs')


def _is_v2_parameter_server_strategy(strategy):
  v2 = getattr(tf.distribute.experimental, 'ParameterServerStrategy', None)
  return strategy is not None and v2 is not None and type(strategy) is v2


def _is_tpu_strategy(strategy):
  return type(strategy).__name__.startswith('TPUStrategy')


def _distributed_session_config(task_type, task_id):
  """Estimator's default ConfigProto for a task of a TF_CONFIG cluster."""
  filters = {
      TaskType.MASTER: ['/job:ps', '/job:master'],
      TaskType.CHIEF: ['/job:ps', '/job:chief'],
      TaskType.WORKER: ['/job:ps', f'/job:worker/task:{task_id}'],
      TaskType.PS: ['/job:ps', '/job:worker', '/job:chief', '/job:master'],
  }.get(task_type)
  if filters is None:
    return None
  rewrite = tf.compat.v1.GraphOptions().rewrite_options
  rewrite.meta_optimizer_iterations = type(rewrite).ONE
  graph_options = tf.compat.v1.GraphOptions(rewrite_options=rewrite)
  return tf.compat.v1.ConfigProto(allow_soft_placement=True,
                                  graph_options=graph_options,
                                  device_filters=filters)


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
    steps_default = save_checkpoints_steps is _USE_DEFAULT
    secs_default = save_checkpoints_secs is _USE_DEFAULT
    if steps_default and secs_default:
      save_checkpoints_steps, save_checkpoints_secs = None, _DEFAULT_SAVE_SECS
    elif secs_default:
      save_checkpoints_secs = None
    elif steps_default:
      save_checkpoints_steps = None
    elif (save_checkpoints_steps is not None and
          save_checkpoints_secs is not None):
      raise ValueError(_SAVE_CKPT_ERR)
    if (_is_v2_parameter_server_strategy(train_distribute) or
        _is_v2_parameter_server_strategy(eval_distribute)):
      raise ValueError(
          'Please use `tf.compat.v1.distribute.experimental.ParameterServer'
          'Strategy` for parameter server strategy with estimator.')
    if experimental_distribute is not None:
      raise ValueError('RunConfig: experimental_distribute is not supported '
                       'by trainer.legacy; use train_distribute and '
                       'eval_distribute.')
    tf_config = tf_config_from_env()
    self._set(model_dir=_model_dir(tf_config, model_dir),
              tf_random_seed=tf_random_seed,
              save_summary_steps=save_summary_steps,
              save_checkpoints_steps=save_checkpoints_steps,
              save_checkpoints_secs=save_checkpoints_secs,
              session_config=session_config,
              keep_checkpoint_max=keep_checkpoint_max,
              keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
              log_step_count_steps=log_step_count_steps,
              train_distribute=train_distribute, device_fn=device_fn,
              protocol=protocol, eval_distribute=eval_distribute,
              experimental_distribute=experimental_distribute,
              experimental_max_worker_delay_secs=(
                  experimental_max_worker_delay_secs),
              session_creation_timeout_secs=session_creation_timeout_secs,
              checkpoint_save_graph_def=checkpoint_save_graph_def)
    strategies = [s for s in (train_distribute, eval_distribute) if s]
    if any(not _is_tpu_strategy(s) for s in strategies):
      tf.compat.v1.logging.info(
          'Initializing RunConfig with distribution strategies.')
      self._init_with_strategy(tf_config)
    else:
      self._init_from(tf_config)

  def _init_from(self, tf_config):
    for name, value in cluster_settings(tf_config).items():
      setattr(self, '_' + name, value)
    self._distribute_coordinator_mode = None
    self._default_session_config()

  def _init_with_strategy(self, tf_config):
    """With a (non-TPU) strategy, a chief/worker cluster is the strategy's:
    the task itself reports as local, the cluster_spec is TF_CONFIG's, and
    train_and_evaluate runs the Distribute Coordinator's independent-worker
    mode (trainer/facade/coordinator.py), which gives each task's copy of
    the Estimator its own settings (for_worker_context)."""
    cluster = tf.train.ClusterSpec(tf_config.get('cluster', {}))
    self._init_from({})
    if (not cluster or TaskType.MASTER in cluster.jobs or
        not self._train_distribute):
      self._init_from(tf_config)
      tf.compat.v1.logging.info('Not using Distribute Coordinator.')
      return
    self._cluster_spec = cluster
    self._distribute_coordinator_mode = INDEPENDENT_WORKER
    tf.compat.v1.logging.info('RunConfig initialized for Distribute '
                              'Coordinator with INDEPENDENT_WORKER mode')

  def for_worker_context(self, context, strategy):
    """A copy with the settings of a Distribute Coordinator task context
    (cluster_spec, task_type, task_id, master, is_chief and the counts
    derived from them; an evaluator sees no cluster), `strategy` as the
    strategy of its role, and no coordinator mode (as Estimator's
    distribute-coordinator training gives each task's Estimator copy)."""
    new = copy.deepcopy(self)
    new._service = None
    new._cluster_spec = context.cluster_spec or tf.train.ClusterSpec({})
    new._task_type, new._task_id = context.task_type, context.task_id
    new._master = new._evaluation_master = context.master_target
    new._is_chief = context.is_chief
    new._distribute_coordinator_mode = None
    if context.task_type == TaskType.EVALUATOR:
      new._eval_distribute = strategy
    else:
      new._train_distribute = strategy
    spec = new._cluster_spec
    if not spec:
      new._global_id_in_cluster, new._num_ps_replicas = 0, 0
      new._num_worker_replicas = 1
    elif context.task_type == TaskType.EVALUATOR:
      new._cluster_spec = tf.train.ClusterSpec({})
      new._num_ps_replicas = new._num_worker_replicas = 0
      new._global_id_in_cluster = None
    else:
      new._num_ps_replicas = _count(spec, TaskType.PS)
      new._num_worker_replicas = _count(spec, TaskType.WORKER, TaskType.CHIEF)
      new._global_id_in_cluster = _global_id(
          spec, context.task_type, context.task_id, TaskType.CHIEF)
    return new

  def _default_session_config(self):
    if not self._session_config and self._cluster_spec:
      self._session_config = _distributed_session_config(self._task_type,
                                                         self._task_id)

  def _set(self, replaced=None, **values):
    """Sets constructor arguments, then checks them as Estimator does."""
    for name, value in values.items():
      if name not in _REPLACEABLE:
        raise ValueError(f'Replacing {name} is not supported. Allowed '
                         f'properties are {list(_REPLACEABLE)}.')
      setattr(self, '_' + name, value)
    replaced = values.keys() if replaced is None else replaced
    steps, secs = self._save_checkpoints_steps, self._save_checkpoints_secs
    if ('save_checkpoints_steps' in replaced and
        'save_checkpoints_secs' in replaced):
      if steps is not None and secs is not None:
        raise ValueError(_SAVE_CKPT_ERR)
    elif 'save_checkpoints_steps' in replaced and steps is not None:
      self._save_checkpoints_secs = None  # Setting one clears the other.
    elif 'save_checkpoints_secs' in replaced and secs is not None:
      self._save_checkpoints_steps = None
    _check(self)
    return self

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
    """A copy with the named constructor arguments replaced (ValueError for
    any other name, or for values Estimator rejects)."""
    return copy.deepcopy(self)._set(**kwargs)

  def __deepcopy__(self, memo):
    """A copy sharing strategies, resolvers and device_fn (not copyable)."""
    new = copy.copy(self)
    if self._session_config is not None:
      new._session_config = copy.deepcopy(self._session_config, memo)  # pylint: disable=protected-access
    return new

  def __repr__(self):
    fields = ', '.join(f'{k[1:]}={v!r}' for k, v in sorted(vars(self).items()))
    return f'{type(self).__name__}({fields})'


def uses_distribute_coordinator(config):
  """Whether Estimator runs train_and_evaluate with its Distribute
  Coordinator: a (non-TPU) train_distribute strategy and a TF_CONFIG
  cluster without a master (not in a task's copy the coordinator made)."""
  return getattr(config, '_distribute_coordinator_mode', None) is not None
