"""Starts a tf.data service dispatcher or worker and serves until killed.

One dispatcher per cluster, then any number of workers (one per machine
with spare CPU), then train with --tf_data_service=grpc://DISPATCHER:PORT:

  python -m scripts.tf_data_service --role=dispatcher --port=5050
  python -m scripts.tf_data_service --role=worker \\
      --dispatcher=grpc://DISPATCHER_HOST:5050 --port=5051

Workers read the training files themselves (--data_dir must be readable
from every worker, e.g. gs://) and run the same TensorFlow version as the
trainer. The first line printed names the address the server listens on.
"""

import socket

from absl import app
from absl import flags
import tensorflow as tf

from input_fn import data_service
from trainer.compat import tf_private

ROLES = ('dispatcher', 'worker')

_ROLE = flags.DEFINE_enum('role', None, ROLES, 'Which server to start.')
_PORT = flags.DEFINE_integer(
    'port', 0, 'Port to listen on; 0 picks a free one (printed).',
    lower_bound=0)
_DISPATCHER = flags.DEFINE_string(
    'dispatcher', None, 'worker: grpc://HOST:PORT of the dispatcher.')
_HOST = flags.DEFINE_string(
    'host', None, 'Host name clients reach this server by. Default: this '
    "machine's fully qualified name.")


def start(role, port=0, dispatcher=None, host=None):
  """The started DispatchServer or WorkerServer; ValueError naming the flag
  when a worker has no valid --dispatcher."""
  service = tf.data.experimental.service
  host = host or socket.getfqdn()
  if role == 'dispatcher':
    return service.DispatchServer(service.DispatcherConfig(port=port))
  if role != 'worker':
    raise ValueError(f'--role must be one of {ROLES}, got {role!r}.')
  if not dispatcher:
    raise ValueError('--role=worker needs --dispatcher=grpc://HOST:PORT.')
  try:
    data_service.check_address(dispatcher)
  except ValueError as e:
    raise ValueError(str(e).replace('--tf_data_service', '--dispatcher')) from e
  return service.WorkerServer(service.WorkerConfig(
      dispatcher_address=dispatcher.split('://', 1)[1], port=port,
      worker_address=f'{host}:%port%'))


def main(argv):
  del argv
  server = start(_ROLE.value, _PORT.value, _DISPATCHER.value, _HOST.value)
  if _ROLE.value == 'dispatcher':
    port = server.target.rsplit(':', 1)[1]
    print(f'dispatcher listening on grpc://{_HOST.value or socket.getfqdn()}:'
          f'{port}', flush=True)
  else:
    address = tf_private.data_service_worker_address(server)
    print(f'worker listening on port {address.rsplit(":", 1)[1]} '
          f'for {_DISPATCHER.value}', flush=True)
  server.join()


if __name__ == '__main__':
  flags.mark_flag_as_required('role')
  app.run(main)
