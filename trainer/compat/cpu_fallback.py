"""--cpu_fallback: a TPUClusterResolver that finds no TPU means "no TPU".

Programs written for Cloud TPUs call TPUClusterResolver(FLAGS.tpu or '')
even with --use_tpu=false; outside Google Cloud that raises (`ValueError:
Please provide a TPU Name to connect to.`, or a lookup error for a name).
install_fallback() replaces TPUClusterResolver in TensorFlow's public API
(tf.distribute.cluster_resolver, tf.compat.v1.distribute.cluster_resolver)
by a subclass that, when the real constructor raises, logs one loud warning
and returns a NoTPUClusterResolver (master '', empty cluster spec). A
TPUEstimator given such a resolver with use_tpu=True runs with
use_tpu=False, logged as loudly. The TPUStrategy pattern (resolve, else run
without a TPU), applied to legacy code; on TF 2.15 too.
"""

import logging as std_logging

import tensorflow as tf

# A module logger, not absl's module functions: those call basicConfig()
# before the program's app.run, and TF's log lines then print twice.
logging = std_logging.getLogger(__name__)


_FALLBACK_MESSAGE = ('trainer.legacy --cpu_fallback: %s found no TPU (%s). '
                     'Running WITHOUT a TPU, on CPU/GPU.')
_installed = []


class NoTPUClusterResolver(tf.distribute.cluster_resolver.ClusterResolver):
  """A resolver for "no TPU": local master '', no cluster, no accelerators."""

  def __init__(self, reason):
    self.reason = reason
    self.task_type = None
    self.task_id = None
    self.rpc_layer = None

  def cluster_spec(self):
    return tf.train.ClusterSpec({})

  def master(self, task_type=None, task_id=None, rpc_layer=None):
    del task_type, task_id, rpc_layer
    return ''

  def get_master(self):
    return ''

  def get_job_name(self):
    return None

  def num_accelerators(self, task_type=None, task_id=None,
                       config_proto=None):
    del task_type, task_id, config_proto
    return {}

  @property
  def environment(self):
    return ''

  def __repr__(self):
    return f'NoTPUClusterResolver({self.reason!r})'


def is_fallback(resolver):
  """Whether `resolver` is what --cpu_fallback made of a failed resolver."""
  return isinstance(resolver, NoTPUClusterResolver)


def log_use_tpu_fallback():
  logging.warning('trainer.legacy --cpu_fallback: TPUEstimator(use_tpu=True) '
                  'with a resolver that found no TPU: running with '
                  'use_tpu=False, on CPU/GPU.')


def _fallback_class(real):

  class TPUClusterResolver(real):  # pylint: disable=missing-class-docstring
    __doc__ = real.__doc__

    def __new__(cls, *args, **kwargs):
      resolver = super().__new__(cls)
      try:
        real.__init__(resolver, *args, **kwargs)
      except Exception as e:  # pylint: disable=broad-except
        tpu = args[0] if args else kwargs.get('tpu')
        call = f'TPUClusterResolver({tpu!r})'
        reason = f'{type(e).__name__}: {e}'
        logging.warning(_FALLBACK_MESSAGE, call, reason)
        return NoTPUClusterResolver(reason)
      return resolver

    def __init__(self, *args, **kwargs):  # pylint: disable=super-init-not-called
      del args, kwargs  # Initialised in __new__.

  TPUClusterResolver.__qualname__ = real.__qualname__
  TPUClusterResolver.__module__ = real.__module__
  return TPUClusterResolver


def install_fallback():
  """Makes TPUClusterResolver fall back to "no TPU"; idempotent."""
  if _installed:
    return
  modules = [tf.distribute.cluster_resolver,
             tf.compat.v1.distribute.cluster_resolver]
  real = tf.distribute.cluster_resolver.TPUClusterResolver
  patched = _fallback_class(real)
  for module in modules:
    if getattr(module, 'TPUClusterResolver', None) is real:
      setattr(module, 'TPUClusterResolver', patched)
  if (getattr(tf.compat.v1, 'estimator', None) is not None and
      hasattr(tf.compat.v1.estimator.tpu, 'TPUEstimator')):
    _patch_real_tpu_estimator(tf.compat.v1.estimator.tpu.TPUEstimator)
  _installed.append(patched)
  logging.info('trainer.legacy --cpu_fallback: a TPUClusterResolver that '
               'finds no TPU will mean "no TPU".')


def _patch_real_tpu_estimator(tpu_estimator_class):
  """TF <= 2.15: the real TPUEstimator runs use_tpu=False on a fallback."""
  original = tpu_estimator_class.__init__

  def __init__(self, *args, **kwargs):  # pylint: disable=invalid-name
    config = kwargs.get('config', args[2] if len(args) > 2 else None)
    use_tpu = kwargs.get('use_tpu', args[4] if len(args) > 4 else True)
    if use_tpu and is_fallback(getattr(config, 'cluster', None)):
      log_use_tpu_fallback()
      if len(args) > 4:
        args = args[:4] + (False,) + args[5:]
      else:
        kwargs['use_tpu'] = False
    original(self, *args, **kwargs)

  tpu_estimator_class.__init__ = __init__
