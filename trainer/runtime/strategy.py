"""Chooses the tf.distribute strategy of the tf2 runner.

  --tpu given            -> TPUStrategy (resolve with a deadline, connect,
                            initialize; same errors as the estimator runner)
  TF_CONFIG with ps      -> ParameterServerStrategy (on the chief, the
                            coordinator: trainer/engines/tf2/
                            parameter_servers.py)
  TF_CONFIG, >1 workers  -> MultiWorkerMirroredStrategy
  several local devices  -> MirroredStrategy (--num_cpu_devices N splits the
                            CPU into N logical devices)
  otherwise              -> the default (one-device) strategy
"""

import weakref

from absl import logging
import tensorflow as tf

from trainer.runtime import tf_config
from trainer.runtime import tpu_cluster


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


def make_strategy(cluster):
  """(strategy, kind) for a Config's cluster settings (`config.cluster`, a
  trainer.config.Cluster); kind names the choice for logs and tests."""
  if cluster.use_tpu:
    resolver = tpu_cluster.resolve_tpu(cluster)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver), 'tpu'
  tf_config.check_trainable_cluster()
  if tf_config.has_ps():  # The chief: the coordinator (engines/tf2).
    tf_config.ensure_coordinator_threads()
    return (tf.distribute.experimental.ParameterServerStrategy(
        tf_config.training_cluster_resolver()), 'parameter_server')
  if tf_config.cluster_workers() > 1:
    tf_config.configure_peer_timeout(cluster.peer_timeout_secs)
    return tf.distribute.MultiWorkerMirroredStrategy(), 'multi_worker_mirrored'
  num_cpu = cluster.num_cpu_devices
  split_cpu(num_cpu)
  devices = (tf.config.list_logical_devices('GPU') or
             tf.config.list_logical_devices('CPU')[:num_cpu])
  if len(devices) > 1:
    return (tf.distribute.MirroredStrategy([d.name for d in devices]),
            'mirrored')
  return tf.distribute.get_strategy(), 'default'


def per_replica_batches(config, num_replicas, runner):
  """{'train', 'eval': the per-replica batch} of a Config's global batches
  over `num_replicas` (the strategy's replicas in sync): the one place the
  runners split them. ValueError naming the flag when one does not divide
  (`runner` names the runner in the message)."""
  batches = {}
  for mode, key in (('train', 'train_batch_size'),
                    ('eval', 'eval_batch_size')):
    batch = getattr(config, key)
    if batch % num_replicas:
      raise ValueError(f'--{key}={batch} must be divisible by the '
                       f'{num_replicas} replicas of the {runner}.')
    batches[mode] = batch // num_replicas
  return batches


def strategy_kind(strategy):
  """The runners' name for `strategy`'s kind: 'tpu', 'multi_worker_mirrored',
  'mirrored', 'parameter_server' (TF2's), 'default' (the default strategy,
  none in scope), else its class name (OneDeviceStrategy, a tf.compat.v1
  parameter-server or central-storage strategy)."""
  if isinstance(strategy, tf.distribute.TPUStrategy):
    return 'tpu'
  if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return 'multi_worker_mirrored'
  if isinstance(strategy, tf.distribute.MirroredStrategy):
    return 'mirrored'
  if isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy):
    return 'parameter_server'  # TF2's (make_strategy's for a ps cluster).
  if (not tf.distribute.has_strategy() and
      strategy is tf.distribute.get_strategy()):
    return 'default'
  return type(strategy).__name__


def is_parameter_server(strategy):
  """Whether `strategy` trains with parameter servers (ParameterServer-,
  CentralStorageStrategy, their tf.compat.v1 classes too)."""
  kind = type(strategy).__name__
  return 'ParameterServer' in kind or 'CentralStorage' in kind


def is_distributed(strategy):
  """Whether Estimator runs under `strategy` distributed: several replicas,
  on TPU, across workers or with parameter servers (tf.compat.v1 classes
  included, by name); False for None and one-replica strategies."""
  if strategy is None:
    return False
  kind = type(strategy).__name__
  return (strategy.num_replicas_in_sync > 1 or
          strategy_kind(strategy) in ('tpu', 'multi_worker_mirrored') or
          'TPU' in kind or 'MultiWorker' in kind or
          is_parameter_server(strategy))


def any_worker(strategy, flag):
  """Whether `flag` is True on any worker of a MultiWorkerMirroredStrategy
  job (an all-reduce every worker must call at the same point); `flag`
  itself under any other strategy."""
  if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return bool(flag)
  vote = _votes.get(strategy)
  if vote is None:
    @tf.function
    def vote(value):
      votes = strategy.run(tf.identity, args=(value,))
      return strategy.reduce(tf.distribute.ReduceOp.SUM, votes, axis=None)
    _votes[strategy] = vote
  return bool(vote(tf.constant(1.0 if flag else 0.0)).numpy() > 0)


_votes = weakref.WeakKeyDictionary()  # strategy -> its compiled vote


def supports_jit(kind):
  """Whether the replica step may be XLA-compiled under this strategy kind.

  TPUStrategy compiles anyway; MirroredStrategy over logical CPU devices
  fails under jit_compile (resources on CPU:1 accessed from CPU:0), and CPU
  collectives of MultiWorkerMirrored are not compiled either.
  """
  return kind == 'default'


JIT_SETTINGS = ('auto', 'on', 'off')


def _device_type():
  return 'GPU' if tf.config.list_logical_devices('GPU') else 'CPU'


def choose_jit(kind, setting='auto'):
  """Whether to XLA-compile the replica step; logs the choice and why.

  auto: TPU always (TPUStrategy compiles every step); on one CPU or GPU
  device, no: measured on CPU, XLA was slower (bench/runners.py, built-in
  MLP: 855 against 960 steps/s without it on TF 2.15, 637 against 879 on
  TF 2.20; an EfficientNet-style network took 116 s to compile and ran 6x
  slower), and GPU was not measured. on / off force it; on is
  refused where the strategy cannot compile the step.
  """
  if setting not in JIT_SETTINGS:
    raise ValueError(f'--jit_compile={setting!r} is not one of '
                     f'{", ".join(JIT_SETTINGS)}.')
  if kind == 'tpu':
    logging.info('jit_compile: on (TPUStrategy compiles every step).')
    return False  # TPUStrategy compiles the step itself.
  if setting == 'on' and not supports_jit(kind):
    raise ValueError(f'--jit_compile=on: the {kind} strategy cannot '
                     'XLA-compile the step (MirroredStrategy over logical '
                     'CPU devices accesses resources across devices); use '
                     '--jit_compile=auto or off.')
  jit = setting == 'on'
  why = ('forced by --jit_compile' if setting != 'auto' else
         f'auto on {_device_type()}: XLA measured slower on CPU, GPU not '
         'measured; --jit_compile=on forces it')
  logging.info('jit_compile: %s (%s).', 'on' if jit else 'off', why)
  return jit


def input_host_device(strategy):
  """The CPU device this process's input pipelines run on (TPUContext's
  host device)."""
  try:
    worker = strategy.extended.worker_devices[0]
  except (RuntimeError, AttributeError, IndexError):  # Default strategy.
    return '/job:localhost/replica:0/task:0/device:CPU:0'
  spec = tf.DeviceSpec.from_string(worker)
  return spec.replace(device_type='CPU', device_index=0).to_string()


def gather(strategy, value, axis=0):
  """Every replica's `value` concatenated along `axis`, across workers too;
  a tf.compat.v1 strategy (no `gather`) concatenates its local replicas'."""
  if hasattr(strategy, 'gather'):
    return strategy.gather(value, axis=axis)
  return tf.concat(strategy.experimental_local_results(value), axis=axis)
