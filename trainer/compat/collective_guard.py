"""Refuses a MultiWorkerMirroredStrategy made eagerly in a cluster with ps.

Made eagerly with a TF_CONFIG cluster that lists "ps" tasks, the strategy
(v2 and tf.compat.v1) joins a collective runtime that waits for every task
of the cluster, ps included, which never join: a chief or worker hangs in
the constructor (Estimator on TF 2.15 too), the ps task fails with
"There is no id for task_type 'ps'". install() (the facade's launcher calls
it for such clusters) makes the constructor raise instead, on the chief and
workers, before anything starts. In graph mode (the program called
tf.compat.v1.disable_eager_execution(), as Estimator requires for this
strategy) nothing changes: the strategy then starts nothing.
"""

import functools
import json
import os

import tensorflow as tf

_installed = []


class CollectiveWithParameterServersError(ValueError):
  """The strategy would wait forever for the cluster's ps tasks."""


def _check():
  """Raises for a chief/worker of a TF_CONFIG cluster with ps tasks, eager."""
  if not tf.executing_eagerly():
    return
  try:
    tf_config = json.loads(os.environ.get('TF_CONFIG') or '{}')
    ps = tf_config.get('cluster', {}).get('ps')
    task = tf_config.get('task', {}).get('type')
  except (ValueError, AttributeError):
    return  # TF's own TF_CONFIG error is clearer.
  if not ps or task not in ('chief', 'worker', 'master'):
    return
  raise CollectiveWithParameterServersError(
      'MultiWorkerMirroredStrategy made in eager mode on a TF_CONFIG cluster '
      f'with "ps" tasks ({len(ps)}): it would wait forever for the ps tasks '
      'to join its collective runtime (Estimator on TF 2.15 hangs here too). '
      'Estimator trains this strategy in graph mode: call '
      'tf.compat.v1.disable_eager_execution() at the start of the program '
      '(the ps tasks then exit with an error, as under Estimator), or drop '
      'the "ps" tasks from the job; for parameter-server training use '
      'tf.compat.v1.distribute.experimental.ParameterServerStrategy.')


def _reads_tf_config(args, kwargs):
  """Whether the strategy takes its cluster from TF_CONFIG: no resolver
  argument, or a TFConfigClusterResolver."""
  resolvers = tf.distribute.cluster_resolver
  given = [a for a in list(args) + list(kwargs.values())
           if isinstance(a, resolvers.ClusterResolver)]
  return not given or isinstance(given[0], resolvers.TFConfigClusterResolver)


def _guarded(init):
  @functools.wraps(init)
  def wrapper(self, *args, **kwargs):
    if _reads_tf_config(args, kwargs):
      _check()
    return init(self, *args, **kwargs)
  return wrapper


def install():
  """Guards both MultiWorkerMirroredStrategy classes' constructors (once)."""
  if _installed:
    return
  from tensorflow.python.distribute import collective_all_reduce_strategy as module  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  for cls in (module.CollectiveAllReduceStrategy,
              module.CollectiveAllReduceStrategyV1):
    _installed.append((cls, cls.__init__))
    cls.__init__ = _guarded(cls.__init__)


def uninstall():
  """Puts the constructors install() replaced back (for tests)."""
  while _installed:
    cls, init = _installed.pop()
    cls.__init__ = init
