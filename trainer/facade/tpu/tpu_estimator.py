"""TPUEstimator of the facade (tf.compat.v1.estimator.tpu.TPUEstimator).

Same constructor arguments and checks as tensorflow_estimator 2.15's; off
TPU it runs as Estimator does (trainer/facade/estimator.py), on a TPU on the
tf2 runner's TPUStrategy.
"""

import math

from trainer.compat import cpu_fallback
from trainer.facade import estimator as estimator_lib
from trainer.facade.distributed import backend
from trainer.engines.graph import program as program_lib
from trainer.facade.tpu import tpu_config
from trainer.facade.tpu import util

_RESERVED_PARAMS_KEYS = ('batch_size', 'context')


class TPUEstimator(estimator_lib.Estimator):
  """tf.compat.v1.estimator.tpu.TPUEstimator.

  Off TPU (use_tpu=False, or no TPU found under --cpu_fallback) it runs as
  TPUEstimator does there, on the graph engine: params['batch_size'] is the
  global batch of the mode, params['use_tpu'] False, a TPUEstimatorSpec
  runs through as_estimator_spec(), global_step/sec and examples/sec are
  logged every ceil(log_step_count_steps / iterations_per_loop) steps. On a
  TPU it runs on the tf2 runner's TPUStrategy.
  """

  def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
               use_tpu=True, train_batch_size=None, eval_batch_size=None,
               predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
               export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
               embedding_config_spec=None,
               export_saved_model_api_version=1):
    del batch_axis, eval_on_tpu
    if config is None or not isinstance(config, tpu_config.TPURunConfig):
      raise ValueError(
          '`config` must be provided with type `tpu_config.RunConfig`')
    if params is not None and any(k in params for k in _RESERVED_PARAMS_KEYS):
      raise ValueError(f'{list(_RESERVED_PARAMS_KEYS)} are reserved keys but '
                       f'existed in params {params}.')
    if use_tpu:
      if train_batch_size is None:
        raise ValueError('`train_batch_size` cannot be `None`')
      if (config.tpu_config.per_host_input_for_training is
          tpu_config.InputPipelineConfig.PER_SHARD_V1 and
          config.tpu_config.num_cores_per_replica):
        raise ValueError(
            'Model parallelism only supports per host input for training. '
            'Please adjust TPURunconfig.per_host_input_for_training.')
      for name, value in (('train_batch_size', train_batch_size),
                          ('eval_batch_size', eval_batch_size),
                          ('predict_batch_size', predict_batch_size)):
        if value is not None:
          util.check_positive_integer(value, name)
    if use_tpu and cpu_fallback.is_fallback(config.cluster):
      cpu_fallback.log_use_tpu_fallback()
      use_tpu = False
    if embedding_config_spec is not None:
      raise NotImplementedError(
          'TPUEstimator(embedding_config_spec=...) (TPU embeddings) is not '
          'supported by trainer.legacy: use tf.tpu.experimental.embedding.'
          'TPUEmbedding under TPUStrategy, or a regular embedding lookup.')
    export_api_version = getattr(export_saved_model_api_version, 'value',
                                 export_saved_model_api_version)
    if export_api_version not in (1, 2):
      raise ValueError('export_saved_model_api_version should be 1 or 2; '
                       f'got {export_saved_model_api_version}.')
    estimator_lib.verify_model_fn_args(model_fn, params)
    log_every_n_steps = config.log_step_count_steps
    config = config.replace(log_step_count_steps=None)
    self._setup(model_fn, model_dir, config, params or {}, warm_start_from,
                verify=False)
    value, unit = util.parse_iterations_per_loop(
        self._config.tpu_config.iterations_per_loop)
    log_every_n_secs = None
    if unit == 'seconds':
      log_every_n_steps, log_every_n_secs = None, value
    elif log_every_n_steps is not None:
      log_every_n_steps = int(math.ceil(float(log_every_n_steps) / value))
    self._use_tpu = bool(use_tpu)
    self._batch_sizes = (train_batch_size, eval_batch_size, predict_batch_size)
    self._settings = program_lib.TPUSettings(
        train_batch_size=train_batch_size, eval_batch_size=eval_batch_size,
        predict_batch_size=predict_batch_size,
        log_every_n_steps=log_every_n_steps,
        log_every_n_secs=log_every_n_secs, export_to_cpu=export_to_cpu,
        export_to_tpu=export_to_tpu, export_api_version=export_api_version)

  def _tpu_settings(self):
    return self._settings

  def _needs_tf2(self, mode):
    return self._use_tpu or super()._needs_tf2(mode)

  def _backend(self):
    train, eval_, predict = self._batch_sizes
    return backend.Backend(backend.Model(
        model_fn=self._model_fn, params=self._params, config=self._config,
        is_tpu=True, use_tpu=self._use_tpu, train_batch_size=train,
        eval_batch_size=eval_, predict_batch_size=predict,
        warm_start=self._warm_start_settings))
