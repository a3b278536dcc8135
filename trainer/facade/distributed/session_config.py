"""Applies what a RunConfig's session_config (a ConfigProto) can mean in TF2.

Thread pools, soft placement, device placement logging, visible GPUs and
GPU memory growth map onto tf.config; everything else (graph rewrites,
cluster_def, session timeouts) has no meaning without a Session. One log
line says what was applied and what was not.
"""

import logging as std_logging

import tensorflow as tf

# A module logger, not absl's module functions: those call basicConfig()
# before the program's app.run, and TF's log lines then print twice.
logging = std_logging.getLogger(__name__)

_applied_protos = []


def _try(setting, fn, applied, skipped):
  try:
    fn()
    applied.append(setting)
  except (RuntimeError, ValueError) as e:  # TF already initialised.
    skipped.append(f'{setting} ({e})')


def apply(config):
  """Applies ConfigProto `config` once per process; returns what applied."""
  if config is None or any(config == p for p in _applied_protos):
    return []
  _applied_protos.append(config)
  applied, skipped = [], []
  threads = tf.config.threading
  if config.intra_op_parallelism_threads:
    _try(f'intra_op_parallelism_threads={config.intra_op_parallelism_threads}',
         lambda: threads.set_intra_op_parallelism_threads(
             config.intra_op_parallelism_threads), applied, skipped)
  if config.inter_op_parallelism_threads:
    _try(f'inter_op_parallelism_threads={config.inter_op_parallelism_threads}',
         lambda: threads.set_inter_op_parallelism_threads(
             config.inter_op_parallelism_threads), applied, skipped)
  if config.allow_soft_placement:
    _try(f'allow_soft_placement={config.allow_soft_placement}',
         lambda: tf.config.set_soft_device_placement(
             config.allow_soft_placement), applied, skipped)
  if config.log_device_placement:
    _try('log_device_placement=True',
         lambda: tf.debugging.set_log_device_placement(True), applied,
         skipped)
  if config.device_count.get('GPU', None) == 0:
    _try('device_count={"GPU": 0}',
         lambda: tf.config.set_visible_devices([], 'GPU'), applied, skipped)
  if config.gpu_options.allow_growth:
    for gpu in tf.config.list_physical_devices('GPU'):
      _try('gpu_options.allow_growth=True',
           lambda g=gpu: tf.config.experimental.set_memory_growth(g, True),
           applied, skipped)
  handled = {'intra_op_parallelism_threads', 'inter_op_parallelism_threads',
             'allow_soft_placement', 'log_device_placement', 'device_count',
             'gpu_options', 'cluster_def', 'isolate_session_state'}
  ignored = sorted(f.name for f, _ in config.ListFields()
                   if f.name not in handled)
  logging.info('RunConfig.session_config under trainer.legacy: applied %s; '
               'not applicable without a Session: %s%s.',
               ', '.join(applied) or 'nothing', ', '.join(ignored) or 'none',
               f'; could not apply {", ".join(skipped)}' if skipped else '')
  return applied
