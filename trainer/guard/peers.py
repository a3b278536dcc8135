"""A task of a cluster job that was lost, as one clear error.

When a worker of a MultiWorkerMirroredStrategy job dies (SIGKILL, a crashed
host), TensorFlow's coordination service notices its missing heartbeats
(about 10 s) and aborts the collectives of the others, whose step fails
with an UnavailableError naming the lost task inside a long traceback.
Under a TF2 ParameterServerStrategy, when a ps task (or a worker whose
failure the coordinator does not absorb) dies, the coordinator's next call
to it fails with an UnavailableError: gRPC cannot connect to the task it
names. `lost_worker_error(error)` turns either into WorkerLostError, naming
the task and how to resume; any other error is not its business (None).
"""

import re

import tensorflow as tf

from trainer.api import errors

_TASK = re.compile(r'/job:(\w+)/replica:\d+/task:(\d+)')
_SIGNS = ('stopped sending heartbeats', 'Collective ops is aborted',
          'heartbeat timeout', 'has been lost', 'unhealthy')
# gRPC's words for a server that no longer answers (a remote target named).
_GONE = ('Failed to connect to remote host', 'failed to connect to all '
         'addresses', 'Connection reset by peer', 'Socket closed',
         'Connection refused')
_SERVER_JOBS = ('ps', 'worker')


def names_cluster_task(message):
  """Whether an error message is about a remote task of the cluster (it
  names /job:...), not about storage or this process."""
  return _TASK.search(message or '') is not None


class WorkerLostError(errors.TrainerError):
  """A peer worker of the job stopped; this worker stops too."""


def lost_worker_error(error, model_dir):
  """WorkerLostError for a TF error that says a peer worker was lost; None
  for any other error."""
  if not isinstance(error, tf.errors.OpError):
    return None
  message = str(error)
  if not any(sign in message for sign in _SIGNS):
    return _lost_server_error(message, model_dir)
  found = _TASK.search(message)
  task = (f'{found.group(1)} {found.group(2)}' if found
          else 'another worker')
  return WorkerLostError(
      f'the job lost {task} (it stopped sending heartbeats: killed, or its '
      'host failed); this worker stops too. Restart every worker: training '
      f'resumes from the last checkpoint in {model_dir}.')


def _lost_server_error(message, model_dir):
  """WorkerLostError when `message` says a ps or worker task of the
  cluster stopped answering (its process gone); else None."""
  if not any(sign in message for sign in _GONE):
    return None
  found = next((m for m in _TASK.finditer(message)
                if m.group(1) in _SERVER_JOBS), None)
  if found is None:
    return None
  task = f'{found.group(1)} {found.group(2)}'
  return WorkerLostError(
      f'the job lost {task} (its server stopped answering: killed, or its '
      'host failed); the coordinator stops. Restart that task and this one '
      '(TFJob restarts failed pods): training resumes from the last '
      f'checkpoint in {model_dir}.')
