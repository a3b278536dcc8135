"""The job's TF_CONFIG: how many workers, which task is the chief, and how
long a silent peer is waited for.

Reads only the environment (and, for the peer timeout, configures
TensorFlow's coordination service before a strategy exists), so it serves
every runner, the run guard and the facade's launcher alike.
"""

import json
import os

from absl import logging
import tensorflow as tf

from trainer.compat import tf_private


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
  (10 s). True when it configured the job."""
  if not timeout_secs:
    return False
  raw = os.environ.get('TF_CONFIG', '') if tf_config is None else tf_config
  if cluster_workers(raw) <= 1:
    return False
  cluster = tf.train.ClusterSpec(json.loads(raw)['cluster'])
  done = tf_private.configure_peer_heartbeat(cluster, timeout_secs)
  if done:
    logging.info('peer heartbeat timeout: %s s', timeout_secs)
  return done
