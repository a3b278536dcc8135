"""A worker of a multi-worker job that was lost, as one clear error.

When a worker of a MultiWorkerMirroredStrategy job dies (SIGKILL, a crashed
host), TensorFlow's coordination service notices its missing heartbeats
(about 10 s) and aborts the collectives of the others, whose step fails
with an UnavailableError naming the lost task inside a long traceback.
`lost_worker_error(error)` turns that into WorkerLostError, naming the task
and how to resume; any other error is not its business (None).
"""

import re

import tensorflow as tf

from trainer.api import errors

_TASK = re.compile(r'/job:(\w+)/replica:\d+/task:(\d+)')
_SIGNS = ('stopped sending heartbeats', 'Collective ops is aborted',
          'heartbeat timeout', 'has been lost', 'unhealthy')


class WorkerLostError(errors.TrainerError):
  """A peer worker of the job stopped; this worker stops too."""


def lost_worker_error(error, model_dir):
  """WorkerLostError for a TF error that says a peer worker was lost; None
  for any other error."""
  if not isinstance(error, tf.errors.OpError):
    return None
  message = str(error)
  if not any(sign in message for sign in _SIGNS):
    return None
  found = _TASK.search(message)
  task = (f'{found.group(1)} {found.group(2)}' if found
          else 'another worker')
  return WorkerLostError(
      f'the job lost {task} (it stopped sending heartbeats: killed, or its '
      'host failed); this worker stops too. Restart every worker: training '
      f'resumes from the last checkpoint in {model_dir}.')
