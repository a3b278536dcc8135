"""A TF_CONFIG task's part in between-graph replication, as Estimator runs it.

Under Estimator each training task of a TF_CONFIG cluster runs a
`tf.distribute.Server` for its own address (RunConfig.master,
grpc://HOST:PORT); its graph places variables on the ps tasks (a replica
device setter, program.device_fn) and its MonitoredTrainingSession runs on
that server. This module holds the pieces around that session:
  * start_server(config): the task's server, started before training, as
    tf.estimator.train_and_evaluate does (not in a TF_CONFIG "environment"
    of "google", where the platform runs the servers; not for a cluster of
    one trainer, whose master is local). A port already taken fails here,
    naming the task and its address;
  * serve(config): a ps task's server, serving until the process is stopped;
  * worker_start_delay_secs(config): how long worker N waits before it
    trains ((N + 1) * 5 s, at most RunConfig.experimental_max_worker_delay_
    secs, default 60), so that asynchronous training starts from the chief's
    initialised variables, as Estimator waits;
  * warn_if_never_initialised(config): a non-chief trainer of a cluster
    without ps tasks (and without a strategy) has variables of its own,
    which only a chief session would initialise: Estimator's worker waits
    for them until RunConfig.session_creation_timeout_secs (two hours by
    default) and then fails, while the chief trains alone. The facade's
    worker does the same; this says so, and what trains every worker;
  * check_master(config): before a training session, that a server listens
    at RunConfig.master. Estimator.train() called directly (not through
    train_and_evaluate) on a task of a cluster starts no server; the session
    would wait for one for session_creation_timeout_secs (two hours by
    default). This fails at once with what to do instead;
  * watching_ps_tasks(config): while a task trains with variables on ps
    tasks, a ps that stops answering is waited for, as Estimator waits (its
    MonitoredSession makes a new session when the ps is back, restoring the
    last checkpoint), but for ps_timeout_secs at most (set_ps_timeout, the
    launcher's --ps_timeout_secs, default 60; Estimator waits forever): then
    the task stops with one error line naming the ps task, exit status 1,
    and once the ps is back a restarted task resumes from the last
    checkpoint.
"""

import contextlib
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

import tensorflow as tf

from trainer.api import errors
from trainer.runtime import tf_config as tf_config_lib

_v1 = tf.compat.v1
TRAINERS = ('chief', 'master', 'worker')
DELAY_SECS_PER_WORKER = 5
MAX_DELAY_SECS = 60
DEFAULT_PS_TIMEOUT_SECS = 60
PS_LOST_EXIT_STATUS = 1
_servers = {}  # target (grpc://host:port) -> the Server this process runs.
_settings = {'ps_timeout_secs': DEFAULT_PS_TIMEOUT_SECS}


class ServerError(errors.TrainerError, RuntimeError):
  """A task's server could not start or is missing; says what to do."""


def platform_runs_servers():
  """TF_CONFIG's "environment" is "google": the platform starts servers."""
  try:
    tf_config = json.loads(os.environ.get('TF_CONFIG') or '{}')
  except ValueError:
    return False
  return isinstance(tf_config, dict) and tf_config.get(
      'environment') == 'google'


def _task(config):
  return f'{config.task_type}:{config.task_id}'


def _address(config):
  return config.cluster_spec.task_address(config.task_type, config.task_id)


def start_server(config):
  """Starts and returns this task's tf.distribute.Server; None (logged) for
  a cluster of one trainer, whose session is local. RuntimeError, as
  Estimator's, without a cluster, task or master; ServerError naming the
  task and address if the server cannot start (a port in use)."""
  if (not config.cluster_spec or not config.task_type or
      config.task_id is None):
    raise RuntimeError('Could not start server; be sure to specify '
                       'cluster_spec, task_type, and task in RunConfig or set '
                       'the TF_CONFIG environment variable.')
  if not config.master:
    jobs = config.cluster_spec.jobs
    if (len(jobs) == 1 and len(config.cluster_spec.job_tasks(jobs[0])) == 1
        and config.task_type in TRAINERS):
      _v1.logging.info('Skip starting Tensorflow server as there is only one '
                       'node in the cluster.')
      return None
    raise RuntimeError('Could not start server; be sure to specify master in '
                       'RunConfig or set the TF_CONFIG environment variable.')
  _v1.logging.info('Start Tensorflow server.')
  session_config = _v1.ConfigProto(log_device_placement=False)
  if config.session_config is not None:
    session_config.gpu_options.CopyFrom(config.session_config.gpu_options)
  try:  # Made with start=False, the server already binds its port.
    server = tf.distribute.Server(
        config.cluster_spec, job_name=config.task_type,
        task_index=config.task_id, config=session_config, start=False,
        protocol=config.protocol)
    server.start()
  except (tf.errors.UnknownError, tf.errors.InternalError,
          tf.errors.UnavailableError) as e:
    raise ServerError(tf_config_lib.server_start_problem(
        _task(config), _address(config))) from e
  _servers[server.target.decode() if isinstance(server.target, bytes)
           else server.target] = server
  return server


def serve(config):
  """A ps task: starts its server and serves until the process is stopped
  (Estimator's ps never returns)."""
  server = start_server(config)
  if server is None:
    return
  _v1.logging.info('Task %s serves variables at %s until it is stopped.',
                   _task(config), _address(config))
  server.join()


def worker_start_delay_secs(config):
  """Seconds worker N waits before training (0 for other task types)."""
  if config.task_type != 'worker':
    return 0
  limit = MAX_DELAY_SECS
  if config.experimental_max_worker_delay_secs is not None:
    limit = int(config.experimental_max_worker_delay_secs)
  return min(limit, (config.task_id + 1) * DELAY_SECS_PER_WORKER)


def delay_worker(config):
  """Sleeps worker_start_delay_secs(config), logged as Estimator logs it."""
  secs = worker_start_delay_secs(config)
  if secs > 0:
    _v1.logging.info('Waiting %d secs before starting training.', secs)
    time.sleep(secs)


def warn_if_never_initialised(config):
  """Logs why a non-chief trainer of a cluster without ps tasks will wait
  (see the module docstring); True if it did."""
  spec = config.cluster_spec
  if (config.is_chief or config.task_type not in TRAINERS or not spec or
      'ps' in spec.jobs):
    return False
  _v1.logging.warning(
      'TF_CONFIG task %s: the cluster has no "ps" task and RunConfig no '
      'train_distribute, so this task\'s variables are its own and only a '
      'chief initialises its own: it waits for them, as Estimator\'s worker '
      'does, until RunConfig.session_creation_timeout_secs (%s s) and then '
      'fails, while the chief trains alone. To train on every worker, add '
      '"ps" tasks to TF_CONFIG (between-graph replication, variables on '
      'the ps) or use RunConfig(train_distribute=tf.distribute.'
      'MultiWorkerMirroredStrategy()) after tf.compat.v1.'
      'disable_eager_execution().', _task(config),
      config.session_creation_timeout_secs)
  return True


def _listening(target, timeout=5):
  """Whether something accepts TCP connections at target (grpc://h:p or
  h:p)."""
  parsed = urllib.parse.urlparse(target if '//' in target else '//' + target)
  try:
    with socket.create_connection((parsed.hostname, parsed.port),
                                  timeout=timeout):
      return True
  except OSError:
    return False


def check_master(config):
  """ServerError unless a server listens at config.master, when it is a
  grpc:// address (the task's own, in a TF_CONFIG cluster)."""
  master = config.master or ''
  if not master.startswith('grpc://') or master in _servers:
    return
  if _listening(master):  # The program started a server itself.
    return
  raise ServerError(
      f'Estimator.train() on TF_CONFIG task {_task(config)}: no TensorFlow '
      f'server listens at {master} (RunConfig.master), so its session would '
      f'wait {config.session_creation_timeout_secs} s for one. Call '
      'tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec), '
      'which starts the task\'s server (and serves a "ps" task), or start '
      'tf.distribute.Server(config.cluster_spec, job_name=config.task_type, '
      'task_index=config.task_id) before calling train().')


def set_ps_timeout(secs):
  """How long a training task waits for a lost ps task (0: forever)."""
  _settings['ps_timeout_secs'] = secs


class _PsWatchdog(threading.Thread):
  """Probes the ps tasks every second; calls on_lost(task, address, secs)
  once one has refused connections for `timeout` s without a break."""

  def __init__(self, addresses, timeout, on_lost):
    super().__init__(name='ps-watchdog', daemon=True)
    self._addresses = addresses
    self._timeout = timeout
    self._on_lost = on_lost
    self._stopped = threading.Event()

  def run(self):
    down_since = {}
    while not self._stopped.wait(1.0):
      now = time.monotonic()
      for index, address in enumerate(self._addresses):
        if _listening(address, timeout=1):
          down_since.pop(index, None)
          continue
        since = down_since.setdefault(index, now)
        if now - since >= self._timeout:
          self._on_lost(f'ps:{index}', address, now - since)
          return

  def stop(self):
    self._stopped.set()


def _stop_for_lost_ps(config, task, address, secs):
  """Ends the process: one error line naming the ps task. The training
  thread may be blocked in TensorFlow waiting for the ps; its variables
  live there, so nothing this process holds can be saved."""
  checkpoint = tf.train.latest_checkpoint(config.model_dir or '')
  message = (
      f'trainer.legacy: error: TF_CONFIG task {task} at {address} has not '
      f'answered for {secs:.0f} s: task {_task(config)} stops training '
      f'(exit {PS_LOST_EXIT_STATUS}). Its variables since the last checkpoint'
      f' ({checkpoint or "none yet"}) are lost with the ps; once {task} runs '
      'again, restart this task (TFJob restarts failed pods): training '
      'resumes from that checkpoint. The launcher\'s --ps_timeout_secs sets '
      'this wait (0: wait forever, as Estimator).')
  sys.stdout.flush()
  print(message, file=sys.stderr, flush=True)
  os._exit(PS_LOST_EXIT_STATUS)  # pylint: disable=protected-access


@contextlib.contextmanager
def watching_ps_tasks(config):
  """While the block trains a task whose variables live on ps tasks, stops
  the process once a ps task has been unreachable for ps_timeout_secs (see
  the module docstring)."""
  timeout = _settings['ps_timeout_secs']
  spec = config.cluster_spec
  if (not timeout or not config.num_ps_replicas or not spec or
      'ps' not in spec.jobs or not (config.master or '').startswith('grpc')):
    yield
    return
  watchdog = _PsWatchdog(
      spec.job_tasks('ps'), timeout,
      lambda task, address, secs: _stop_for_lost_ps(config, task, address,
                                                    secs))
  watchdog.start()
  try:
    yield
  finally:
    watchdog.stop()
