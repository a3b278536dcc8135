"""Known failures of a TF_CONFIG job, each as one line naming the task,
the address or what in TF_CONFIG is wrong, and the fix (entries of
trainer/runtime/failures.py's registry): TF_CONFIG that is not JSON, a task
its cluster does not have, a cluster without its one chief (Estimator's
RunConfig refuses these), and a task's server that cannot start (its port
taken by another process).
"""

import errno
import re
import socket

from trainer.guard import failure_parts as parts
from trainer.runtime import tf_config

_REFUSED_CONFIG = re.compile(
    r'TF_CONFIG is not valid JSON|is not a valid task_id|is not a valid '
    r'task_type|must have one "chief" node|Expecting .* line \d+ column')


def _tf_config(error, where):
  """RunConfig's (or the trainer's) refusal of TF_CONFIG: what
  tf_config.problem() says of it."""
  del where
  if not any(_REFUSED_CONFIG.search(parts.message(link)) or
             parts.is_named(link, 'JSONDecodeError')
             for link in parts.chain(error)):
    return None
  return tf_config.problem(needs_chief=True)


def _port_taken(host, port):
  """Whether binding host:port fails because it is in use (None: cannot
  tell)."""
  try:
    with socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET) as s:
      s.bind((host.strip('[]'), port))
    return False
  except OSError as e:
    return True if e.errno == errno.EADDRINUSE else None


def _server_start(error, where):
  del where
  if not re.search(r'Could not start gRPC server',
                   parts.message(error)):
    return None
  found = tf_config.task_address()
  if found is None:
    return None
  task, address = found
  host, _, port = address.rpartition(':')
  taken = _port_taken(host, int(port)) if port.isdigit() else None
  why = ('its port is in use by another process' if taken else
         'the address cannot be bound here (is it this host\'s?)'
         if taken is not None else 'the port is taken or the address is not '
         'this host\'s')
  return (f'TF_CONFIG task {task} could not start its TensorFlow server at '
          f'{address}: {why}. Stop that process, or give the task a free '
          'port of this host in TF_CONFIG "cluster".')


ENTRIES = (
    ('tf-config', _tf_config),
    ('server-start', _server_start),
)
