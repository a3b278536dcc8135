"""Finds the Cloud TPU named by --tpu, failing fast instead of hanging."""

import socket
import threading
import time
import urllib.parse

from absl import logging
import tensorflow as tf

from trainer.api import errors

CONNECT_TIMEOUT_SECS = 60


class TPUUnreachableError(errors.TrainerError, RuntimeError):
  """The TPU named by --tpu cannot be resolved or reached."""


def _call_with_deadline(fn, timeout_secs, what):
  result = {}

  def target():
    try:
      result['value'] = fn()
    except Exception as e:  # pylint: disable=broad-except
      result['error'] = e

  thread = threading.Thread(target=target, daemon=True)
  thread.start()
  thread.join(timeout_secs)
  if thread.is_alive():
    raise TPUUnreachableError(f'{what}: no answer within {timeout_secs:.0f} s.')
  if 'error' in result:
    raise TPUUnreachableError(f'{what}: {result["error"]}') from result['error']
  return result['value']


def probe_master(master, timeout_secs):
  """Raises TPUUnreachableError unless grpc://host:port accepts connections."""
  address = urllib.parse.urlparse(master)
  if address.scheme != 'grpc' or not address.hostname or not address.port:
    raise TPUUnreachableError(f'TPU master {master!r} is not grpc://host:port.')
  try:
    socket.create_connection((address.hostname, address.port),
                             timeout=max(timeout_secs, 1.0)).close()
  except OSError as e:
    raise TPUUnreachableError(
        f'TPU worker {address.hostname}:{address.port} is not reachable: '
        f'{e}') from e


def resolve_tpu(cluster, timeout_secs=CONNECT_TIMEOUT_SECS):
  """A TPUClusterResolver for cluster.tpu (a trainer.config.Cluster,
  `config.cluster`) whose worker answers, or None.

  None (logged) when cluster.use_tpu is false: the runner then uses the CPU.
  Raises TPUUnreachableError, naming --tpu, within `timeout_secs` when the
  TPU cannot be resolved or its worker does not accept connections.
  """
  if not cluster.use_tpu:
    logging.info('No TPU requested (--tpu empty or --use_tpu=false): running '
                 'on CPU with use_tpu=False.')
    return None
  tpu = cluster.tpu
  start = time.monotonic()
  resolver = _call_with_deadline(
      lambda: tf.distribute.cluster_resolver.TPUClusterResolver(
          tpu=tpu, zone=cluster.tpu_zone,
          project=cluster.gcp_project),
      timeout_secs, f'--tpu={tpu}: cannot resolve the TPU')
  master = _call_with_deadline(resolver.master, timeout_secs,
                               f'--tpu={tpu}: cannot get the TPU address')
  try:
    probe_master(master, timeout_secs - (time.monotonic() - start))
  except TPUUnreachableError as e:
    raise TPUUnreachableError(f'--tpu={tpu}: {e}') from e
  logging.info('Using TPU %s at %s.', tpu, master)
  return resolver
