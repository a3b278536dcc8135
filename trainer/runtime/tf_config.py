"""The job's TF_CONFIG: how many workers, which task is the chief, and how
long a silent peer is waited for.

Reads only the environment (and, for the peer timeout, configures
TensorFlow's coordination service before a strategy exists), so it serves
every runner, the run guard and the facade's launcher alike. Importing it
does not import TensorFlow: trainer.main checks TF_CONFIG and takes the
model_dir lock before that import (the functions that build TensorFlow
objects import it).
"""

import errno
import json
import os
import socket

from absl import logging

from trainer.api import errors

# pylint: disable=g-import-not-at-top  (TensorFlow where it is needed)


class UnsupportedClusterError(errors.TrainerError, NotImplementedError):
  """A TF_CONFIG layout the runners of trainer.main cannot train on."""


class TfConfigError(errors.TrainerError, ValueError):
  """TF_CONFIG is not JSON, or names a task its cluster does not have."""


_EXAMPLE = ('{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"]},'
            ' "task": {"type": "chief", "index": 0}}')


def _shown(raw, limit=80):
  return repr(raw if len(raw) <= limit else raw[:limit] + '...')


def _jobs(cluster):
  return ', '.join(f'{kind} x{len(tasks)}' for kind, tasks in cluster.items()
                   if isinstance(tasks, (list, dict)))


def problem(tf_config=None, needs_chief=False):
  """What is wrong with TF_CONFIG, as a message naming it and the fix, or
  None: not JSON, no JSON object, a task type or index its cluster does not
  have; with needs_chief (Estimator's clusters), a cluster without exactly
  one "chief". Reads only the environment."""
  raw = os.environ.get('TF_CONFIG', '') if tf_config is None else tf_config
  if not raw:
    return None
  try:
    config = json.loads(raw)
  except ValueError as e:
    return (f'TF_CONFIG is not valid JSON ({getattr(e, "msg", e)} at '
            f'character {getattr(e, "pos", "?")} of {_shown(raw)}): set it to '
            f'a JSON object such as {_EXAMPLE}, or unset it to train on '
            'this machine alone.')
  if not isinstance(config, dict):
    return (f'TF_CONFIG is {_shown(raw)}, not a JSON object: set it to one '
            f'such as {_EXAMPLE}, or unset it.')
  cluster = config.get('cluster') or {}
  task = config.get('task') or {}
  if not cluster or not isinstance(cluster, dict):
    return None
  kind, index = task.get('type'), task.get('index', 0)
  if kind is not None and kind not in cluster and kind != 'evaluator':
    return (f'TF_CONFIG task {kind}:{index} is not in its cluster, which has '
            f'{_jobs(cluster)}: set "task": {{"type": ...}} to one of '
            f'{", ".join(sorted(cluster))}, or add a "{kind}" job to "cluster".')
  tasks = cluster.get(kind)
  if isinstance(tasks, list):
    try:
      position = int(index)
    except (TypeError, ValueError):
      position = -1
    if not 0 <= position < len(tasks):
      return (f'TF_CONFIG task {kind}:{index} is not in its cluster: job '
              f'"{kind}" has {len(tasks)} task(s), indices 0..'
              f'{len(tasks) - 1}: set "task": {{"index": ...}} to one of them,'
              f' or add this task\'s address to "cluster": {{"{kind}": '
              '[...]}.')
  chiefs = len(cluster.get('chief') or [])
  if needs_chief and chiefs != 1:
    return (f'TF_CONFIG\'s cluster has {chiefs or "no"} "chief" task'
            f'{"s" if chiefs > 1 else ""} ({_jobs(cluster)}); Estimator needs'
            ' exactly one: list the address of the task that leads (worker 0'
            ' of a cluster without one) as "chief": ["host:port"] and number '
            'the remaining workers from 0.')
  return None


def check(tf_config=None):
  """Raises TfConfigError if problem() finds one (trainer.main, before
  TensorFlow starts)."""
  found = problem(tf_config)
  if found:
    raise TfConfigError(found)


def _bind_problem(host, port):
  """Why host:port cannot be bound here: errno.EADDRINUSE (another process
  holds it), errno.EADDRNOTAVAIL (not this host's address), or None (it
  binds now, or the reason is another)."""
  try:
    family = socket.AF_INET6 if ':' in host.strip('[]') else socket.AF_INET
    with socket.socket(family) as probe:
      probe.bind((host.strip('[]'), port))
  except OSError as e:
    if e.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
      return e.errno
  return None


_SERVER_PROBLEMS = {
    errno.EADDRINUSE: ('its port is in use by another process', 'Stop that '
                       'process, or give the task a free port of this host'),
    errno.EADDRNOTAVAIL: ('the address is not one of this host\'s', 'Give '
                          'the task an address of the host it runs on'),
    None: ('its port is in use, or the address is not this host\'s', 'Give '
           'the task a free port of this host'),
}


def server_start_problem(task, address):
  """Why TF_CONFIG task `task` (TYPE:INDEX) could not start its TensorFlow
  server at host:port `address` (TensorFlow says only `Could not start
  gRPC server`), and the fix: the address probed once more."""
  host, _, port = address.rpartition(':')
  why, fix = _SERVER_PROBLEMS[
      _bind_problem(host, int(port)) if port.isdigit() else None]
  return (f'TF_CONFIG task {task} could not start its TensorFlow server at '
          f'{address}: {why}. {fix} in TF_CONFIG "cluster".')


class ServerStartError(errors.TrainerError, RuntimeError):
  """A task's server could not start (server_start_problem says why)."""


def task_address(tf_config=None):
  """(TYPE:INDEX, host:port) of this task in TF_CONFIG, or None."""
  try:
    config = _parsed(tf_config)
    task = config.get('task') or {}
    kind, index = task.get('type'), int(task.get('index', 0))
    return f'{kind}:{index}', config['cluster'][kind][index]
  except (ValueError, KeyError, IndexError, TypeError, AttributeError):
    return None


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


def is_chief_task(tf_config=None):
  """True unless TF_CONFIG names this process a non-chief task of a cluster.

  The chief is task 'chief', or 'worker' 0 when the cluster has no chief.
  Reads only the environment, so it works before TensorFlow starts.
  """
  raw = os.environ.get('TF_CONFIG', '') if tf_config is None else tf_config
  if cluster_workers(raw) <= 1:
    return True
  config = json.loads(raw)
  task = config.get('task', {})
  kind, index = task.get('type'), int(task.get('index', 0))
  if kind == 'chief':
    return True
  return kind == 'worker' and index == 0 and not config['cluster'].get('chief')


def _parsed(tf_config):
  raw = os.environ.get('TF_CONFIG', '') if tf_config is None else tf_config
  return json.loads(raw) if raw else {}


def has_ps(tf_config=None):
  """Whether TF_CONFIG's cluster has "ps" tasks."""
  return bool(_parsed(tf_config).get('cluster', {}).get('ps'))


def task_type(tf_config=None):
  """This task's type in TF_CONFIG (None without one)."""
  return _parsed(tf_config).get('task', {}).get('type')


def training_cluster_resolver(tf_config=None):
  """A cluster resolver of TF_CONFIG's training tasks (chief, worker, ps):
  the evaluator, which TFJob lists in every task's cluster, runs no server
  (it evaluates on its own), so a strategy waiting for it would wait
  forever."""
  config = _parsed(tf_config)
  cluster = {kind: tasks for kind, tasks in config.get('cluster', {}).items()
             if kind != 'evaluator'}
  task = config.get('task', {})
  import tensorflow as tf
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec(cluster), task_type=task.get('type'),
      task_id=int(task.get('index', 0)), rpc_layer='grpc')


def check_trainable_cluster(tf_config=None):
  """Raises UnsupportedClusterError, before any strategy or server exists,
  for a TF_CONFIG cluster with "ps" tasks but no "chief": TF2's
  ParameterServerStrategy needs a chief task to coordinate (TF_CONFIG as
  TFJob writes it for Chief, Worker and PS replicas)."""
  config = _parsed(tf_config)
  cluster = config.get('cluster', {})
  if cluster.get('ps') and not cluster.get('chief'):
    raise UnsupportedClusterError(
        f'TF_CONFIG cluster {sorted(cluster)}: with "ps" tasks, '
        'trainer.main --runner=tf2 trains with tf.distribute.experimental.'
        'ParameterServerStrategy, whose coordinator is the "chief" task: add '
        'one (TFJob: a Chief replica), or run the program as an Estimator '
        'program through `python -m trainer.legacy` (between-graph '
        'replication, where worker 0 may lead; docs/cluster.md).')


def check_no_ps(runner, tf_config=None):
  """UnsupportedClusterError for a runner that does not train with
  parameter servers, on a TF_CONFIG cluster with "ps" tasks."""
  if has_ps(tf_config):
    raise UnsupportedClusterError(
        f'--runner={runner} does not train on a TF_CONFIG cluster with "ps" '
        'tasks: use --runner=tf2 (ParameterServerStrategy with a '
        'ClusterCoordinator), or drop the ps tasks (MultiWorkerMirrored'
        'Strategy).')


def task_index(tf_config=None):
  """This task's index in TF_CONFIG (0 without a cluster)."""
  raw = os.environ.get('TF_CONFIG', '') if tf_config is None else tf_config
  if not raw:
    return 0
  return int(json.loads(raw).get('task', {}).get('index', 0))


def configure_peer_timeout(timeout_secs, tf_config=None):
  """In a TF_CONFIG job of several workers, makes a worker that stops
  sending heartbeats (killed, host lost) count as lost after `timeout_secs`,
  when the others' collectives fail (guard/peers.py names it). Call before
  the MultiWorkerMirroredStrategy is made; None or 0: TensorFlow's default
  (10 s). Only on a chief or worker task. True when it configured the job."""
  if not timeout_secs:
    return False
  raw = os.environ.get('TF_CONFIG', '') if tf_config is None else tf_config
  if cluster_workers(raw) <= 1:
    return False
  # Only the chief and workers join the coordination service; an evaluator
  # (which TFJob lists in every pod's cluster) must not register with it.
  if json.loads(raw).get('task', {}).get('type') not in ('chief', 'worker'):
    return False
  import tensorflow as tf
  from trainer.compat import tf_private
  cluster = tf.train.ClusterSpec(json.loads(raw)['cluster'])
  done = tf_private.configure_peer_heartbeat(cluster, timeout_secs)
  if done:
    logging.info('peer heartbeat timeout: %s s', timeout_secs)
  return done


# A task of a TF2 ParameterServerStrategy cluster with one inter-op thread
# deadlocks: a worker's scheduled function waits on a receive from the ps
# that no free thread serves (measured: every task pinned to one core,
# `taskset -c 0`, hung until killed; 2 threads: trains).
MIN_PS_CLUSTER_INTER_OP_THREADS = 2


def ps_cluster_inter_op_threads(minimum=MIN_PS_CLUSTER_INTER_OP_THREADS):
  """The inter-op thread count a task of a ps cluster must ask for:
  `minimum` when TensorFlow would size its pools below it (fewer usable
  CPUs), else None (TensorFlow's default). An explicit choice is kept:
  the process's tf.config.threading setting or TF_NUM_INTEROP_THREADS."""
  import tensorflow as tf
  if (tf.config.threading.get_inter_op_parallelism_threads() or
      os.environ.get('TF_NUM_INTEROP_THREADS')):
    return None
  usable = (len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity')
            else os.cpu_count() or 1)
  if usable >= minimum:
    return None
  logging.info('%d usable CPU(s): %d inter-op threads for the ps cluster.',
               usable, minimum)
  return minimum


def server_config():
  """The session config of a ps cluster's worker or ps server: enough
  inter-op threads (ps_cluster_inter_op_threads); None for the default."""
  threads = ps_cluster_inter_op_threads()
  if threads is None:
    return None
  import tensorflow as tf
  return tf.compat.v1.ConfigProto(inter_op_parallelism_threads=threads)


def ensure_coordinator_threads():
  """On a ps cluster's coordinator, before its strategy connects: enough
  inter-op threads (ps_cluster_inter_op_threads) for this process."""
  threads = ps_cluster_inter_op_threads()
  if threads is None:
    return
  import tensorflow as tf
  try:
    tf.config.threading.set_inter_op_parallelism_threads(threads)
  except RuntimeError as e:  # TensorFlow's runtime already started.
    logging.warning('Could not raise the inter-op thread pool to %d before '
                    'the ps cluster started (%s); set '
                    'TF_NUM_INTEROP_THREADS=%d.', threads, e, threads)
