"""trainer/guard/peers.py: a lost task of a cluster as one clear error, and
storage's check not mistaking it for an unreachable model_dir."""

import tensorflow as tf

from trainer.guard import peers
from trainer.guard import storage

# What the coordinator of a TF2 ParameterServerStrategy job raised when its
# ps was SIGKILLed (TF 2.20, a loopback cluster; addresses kept).
_PS_GONE = (
    'failed to connect to all addresses; last error: UNKNOWN: '
    'ipv4:127.0.0.1:34441: Failed to connect to remote host: Connection '
    'refused\nAdditional GRPC error information from remote target '
    '/job:ps/replica:0/task:0 while calling '
    '/tensorflow.eager.EagerService/Enqueue:\n:UNKNOWN:Error received from '
    'peer {grpc_message:"failed to connect to all addresses"}')
_PEER_TIMEOUT = (
    'Collective ops is aborted by: Task /job:worker/replica:0/task:1 '
    'heartbeat timeout. This indicates that the remote task has failed')


def test_a_lost_ps_is_named_with_how_to_resume():
  error = tf.errors.UnavailableError(None, None, _PS_GONE)
  lost = peers.lost_worker_error(error, '/jobs/run')
  assert isinstance(lost, peers.WorkerLostError)
  assert str(lost).startswith('the job lost ps 0 (its server stopped '
                              'answering: killed, or its host failed)')
  assert 'resumes from the last checkpoint in /jobs/run' in str(lost)


def test_a_lost_worker_of_a_multi_worker_job_is_named():
  error = tf.errors.UnavailableError(None, None, _PEER_TIMEOUT)
  assert str(peers.lost_worker_error(error, 'm')).startswith(
      'the job lost worker 1 (it stopped sending heartbeats')


def test_other_errors_are_not_peers_business():
  assert peers.lost_worker_error(ValueError(_PS_GONE), 'm') is None
  assert peers.lost_worker_error(
      tf.errors.UnavailableError(None, None, 'Connection refused'),
      'm') is None  # No cluster task named.
  assert peers.lost_worker_error(
      tf.errors.InvalidArgumentError(None, None, 'bad shape /job:ps/'
                                     'replica:0/task:0'), 'm') is None


def test_a_lost_ps_is_not_called_an_unreachable_model_dir():
  # Its gRPC words ('Failed to connect') are also a storage service's.
  error = tf.errors.UnavailableError(None, None, _PS_GONE)
  assert storage.unreachable(error, '/jobs/run') is None
  assert storage.unreachable(
      tf.errors.UnavailableError(None, None, 'Failed to connect to '
                                 'storage.googleapis.com'),
      'gs://b/run') is not None
