"""TPUEstimator of the facade (tf.compat.v1.estimator.tpu.TPUEstimator).

Same constructor arguments and checks as tensorflow_estimator 2.15's, and
its overrides of Estimator's methods (_call_model_fn, _call_input_fn,
_create_global_step, _add_meta_graph_for_mode, ...), called as Estimator
calls them (trainer/facade/estimator.py). Off TPU it runs as Estimator does
there, on the graph engine; on a TPU on the tf2 runner's TPUStrategy.
"""

import math

import tensorflow as tf

from trainer.api import specs
from trainer.compat import cpu_fallback
from trainer.compat import estimator_calls
from trainer.compat import estimator_reexports
from trainer.compat import tpu_rewrite as compat_tpu_inference
from trainer.facade import estimator as estimator_lib
from trainer.facade import unsupported
from trainer.facade.distributed import backend
from trainer.engines.graph import added_hooks
from trainer.engines.graph import program as program_lib
from trainer.engines.graph import tpu_export as tpu_inference
from trainer.facade.tpu import inference
from trainer.facade.tpu import tpu_config
from trainer.facade.tpu import util
from trainer.facade.tpu import validation

ModeKeys = specs.ModeKeys
TPUEstimatorSpec = specs.TPUEstimatorSpec
ExportSavedModelApiVersion = inference.ExportSavedModelApiVersion
BatchConfig = inference.BatchConfig
inference_on_tpu = inference.inference_on_tpu
model_fn_inference_on_tpu = inference.model_fn_inference_on_tpu
ExamplesPerSecondHook = added_hooks.ExamplesPerSecondHook
Summary = tf.compat.v1.Summary

_BATCH_SIZE_KEY = 'batch_size'
_CTX_KEY = 'context'
_USE_TPU_KEY = 'use_tpu'
_RESERVED_PARAMS_KEYS = [_BATCH_SIZE_KEY, _CTX_KEY]
# The mode of a TPUEstimator's TPU inference graph (TPUEstimator's name).
_INFERENCE_ON_TPU_MODE = '_inference_on_tpu'
# TPUEstimator's usage gauge (a TF monitoring cell).
_tpu_estimator_gauge = estimator_reexports.LazyGauge(
    'bool', '/tensorflow/api/tpu_estimator',
    'Whether the program uses tpu estimator.')


def _create_global_step(graph):
  """TPUEstimator's global_step in `graph` (a resource variable);
  ValueError if it exists."""
  return program_lib.tpu_global_step(graph)


def _is_iterable(obj):
  """Whether `obj` is iterable (a string counts)."""
  try:
    iter(obj)
    return True
  except TypeError:
    return False


def _add_item_to_params(params, key, value):
  """params[key] = value, for a dict or an HParams-like object."""
  if hasattr(params, 'set_hparam'):
    if hasattr(params, key):
      params.set_hparam(key, value)
    else:
      params.add_hparam(key, value)
  else:
    params[key] = value


def _extract_key_names(tensor_or_dict):
  """Sorted keys of a dict, [] for anything else."""
  if isinstance(tensor_or_dict, dict):
    return sorted(tensor_or_dict.keys())
  return []


class TPUEstimator(estimator_lib.Estimator):
  """tf.compat.v1.estimator.tpu.TPUEstimator.

  Off TPU (use_tpu=False, or no TPU found under --cpu_fallback) it runs as
  TPUEstimator does there, on the graph engine: params['batch_size'] is the
  global batch of the mode, params['use_tpu'] False, a TPUEstimatorSpec
  runs through as_estimator_spec(), global_step/sec and examples/sec are
  logged every ceil(log_step_count_steps / iterations_per_loop) steps. On a
  TPU it runs on the tf2 runner's TPUStrategy. _augment_model_fn is called
  as TPUEstimator calls it (its result is the model_fn the Estimator calls);
  the facade's own returns the model_fn unchanged, the TPU specifics being
  applied when it is called (by _call_input_fn and _call_model_fn: params
  required, params['batch_size'] the mode's batch, a TPUEstimatorSpec
  converted). train, evaluate, predict and the steps' hooks are
  Estimator's, as TPUEstimator's are off TPU; on a TPU the tf2 runner runs
  iterations_per_loop steps per call.
  """

  def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
               use_tpu=True, train_batch_size=None, eval_batch_size=None,
               predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
               export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
               embedding_config_spec=None,
               export_saved_model_api_version=ExportSavedModelApiVersion.V1):
    _tpu_estimator_gauge.get_cell().set(True)
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
      if embedding_config_spec and (
          config.tpu_config.per_host_input_for_training not in (
              tpu_config.InputPipelineConfig.PER_HOST_V1,
              tpu_config.InputPipelineConfig.PER_HOST_V2)):
        raise ValueError(
            'Only PER_HOST_V1 and PER_HOST_V2 is supported when using TPU '
            'Embedding; got '
            f'{config.tpu_config.per_host_input_for_training}.')
    if (not (use_tpu and eval_on_tpu) and embedding_config_spec and
        embedding_config_spec.partition_strategy == 'mod'):
      raise ValueError('Mod sharding of embedding tables not supported on '
                       'CPU.')
    if (embedding_config_spec is not None and
        config.tpu_config.num_shards == 1 and
        config.tpu_config.num_cores_per_replica is None):
      raise ValueError('Setting TPUConfig.num_shards==1 is unsupported when '
                       'embedding_config_spec is not None.')
    if use_tpu and cpu_fallback.is_fallback(config.cluster):
      cpu_fallback.log_use_tpu_fallback()
      use_tpu = False
    export_api_version = getattr(export_saved_model_api_version, 'value',
                                 export_saved_model_api_version)
    if export_api_version not in (1, 2):
      raise ValueError('export_saved_model_api_version should be 1 or 2; '
                       f'got {export_saved_model_api_version}.')
    model_function = self._augment_model_fn(model_fn, batch_axis)
    log_every_n_steps = config.log_step_count_steps
    config = config.replace(log_step_count_steps=None)
    # Estimator checks the model_fn's arguments as TPUEstimator does.
    super().__init__(model_fn=model_function, model_dir=model_dir,
                     config=config, params=params,
                     warm_start_from=warm_start_from)
    value, unit = util.parse_iterations_per_loop(
        self._config.tpu_config.iterations_per_loop)
    log_every_n_secs = None
    if unit == 'seconds':
      log_every_n_steps, log_every_n_secs = None, value
    elif log_every_n_steps is not None:
      log_every_n_steps = int(math.ceil(float(log_every_n_steps) / value))
    self._use_tpu = bool(use_tpu)
    self._eval_on_tpu = bool(eval_on_tpu)
    self._embedding_config_spec = embedding_config_spec
    self._context = validation.TPUContext(
        self._config, train_batch_size, eval_batch_size, predict_batch_size)
    self._batch_sizes = (train_batch_size, eval_batch_size, predict_batch_size)
    self._export_to_cpu = export_to_cpu
    self._export_to_tpu = export_to_tpu
    self._export_saved_model_api_version = export_saved_model_api_version
    self._settings = program_lib.TPUSettings(
        train_batch_size=train_batch_size, eval_batch_size=eval_batch_size,
        predict_batch_size=predict_batch_size,
        log_every_n_steps=log_every_n_steps,
        log_every_n_secs=log_every_n_secs, export_to_cpu=export_to_cpu,
        export_to_tpu=export_to_tpu, export_api_version=export_api_version)

  # -- the facade's engines -------------------------------------------------

  def _tpu_settings(self):
    return getattr(self, '_settings', None)

  def _on_tpu(self, mode):
    """Whether `mode` runs on the TPU: use_tpu, but evaluation with
    eval_on_tpu=False, which runs on the CPU (TPUEstimator's)."""
    return self._use_tpu and (mode != ModeKeys.EVAL or self._eval_on_tpu)

  def _needs_tf2(self, mode):
    return self._on_tpu(mode) or super()._needs_tf2(mode)

  def _tpu_system(self, mode):
    """The metadata of the TPU system `mode` runs on (validation.TPUSystem),
    which TPUEstimator reads first in each call."""
    del mode  # The facade's cluster serves every mode.
    return self._backend().tpu_system()

  def _validate_on_tpu(self, mode):
    # A subclass's override the tf2 runner would bypass is refused first,
    # before the TPU is reached.
    self._refuse_overrides_on_tf2(mode, self._tf2_reason(mode))
    self._context.validate(mode, self._tpu_system(mode))
    if self._embedding_config_spec is not None:
      raise unsupported.UnsupportedApiError(
          'TPUEstimator(embedding_config_spec=...) on a TPU is not supported '
          'by trainer.legacy yet: its TPU embedding engine (the TPU '
          "embedding columns' lookups and table optimizers) has no "
          'implementation on TF2\'s TPUStrategy here. Instead: run with '
          'use_tpu=False (or --cpu_fallback), where the columns look up '
          'ordinary variables as under TF 2.15, or train the tables with '
          'tf.tpu.experimental.embedding.TPUEmbedding (the configs: '
          'trainer.facade.tpu.embedding.tf2_feature_configs(spec)).')

  def _convert_train_steps_to_hooks(self, steps, max_steps):
    if self._on_tpu(ModeKeys.TRAIN):
      self._validate_on_tpu(ModeKeys.TRAIN)
      validation.check_train_steps(steps, max_steps)
    return super()._convert_train_steps_to_hooks(steps, max_steps)

  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    """Estimator.evaluate; on a TPU after TPUEstimator's checks of the
    configuration and of `steps`."""
    if self._on_tpu(ModeKeys.EVAL):
      self._validate_on_tpu(ModeKeys.EVAL)
      validation.check_eval_steps(steps)
    return super().evaluate(input_fn, steps=steps, hooks=hooks,
                            checkpoint_path=checkpoint_path, name=name)

  def predict(self, input_fn, predict_keys=None, hooks=None,
              checkpoint_path=None, yield_single_examples=True):
    """Estimator.predict; on a TPU after TPUEstimator's checks of the
    input_fn and of the configuration."""
    if self._on_tpu(ModeKeys.PREDICT):
      validation.check_input_fn_args(input_fn,
                                     estimator_calls.fn_args(input_fn))
      self._validate_on_tpu(ModeKeys.PREDICT)
    yield from super().predict(
        input_fn, predict_keys=predict_keys, hooks=hooks,
        checkpoint_path=checkpoint_path,
        yield_single_examples=yield_single_examples)

  def _tf2_reason(self, mode):
    if self._use_tpu:
      return 'on a TPU (use_tpu=True)'
    return super()._tf2_reason(mode)

  def _backend(self):
    train, eval_, predict = self._batch_sizes
    return backend.Backend(backend.Model(
        model_fn=self._model_fn, params=self._params, config=self._config,
        is_tpu=True, use_tpu=self._use_tpu, train_batch_size=train,
        eval_batch_size=eval_, predict_batch_size=predict,
        warm_start=self._warm_start_settings))

  # -- TPUEstimator's overrides of Estimator --------------------------------

  def _augment_model_fn(self, model_fn, batch_axis):
    """The model_fn the Estimator calls (see the class docstring)."""
    del batch_axis
    return model_fn

  def _add_meta_graph_for_mode(self, builder, input_receiver_fn_map,
                               checkpoint_path, save_variables=True,
                               mode=ModeKeys.PREDICT, export_tags=None,
                               check_variables=True,
                               strip_default_attrs=True):
    """The CPU graph of `mode` (export_to_cpu) and, in PREDICT, the TPU
    inference graph (export_to_tpu; tags serve, tpu), which restores and
    saves the variables only without the CPU graph."""
    if self._export_to_tpu and mode != ModeKeys.PREDICT:
      tf.compat.v1.logging.warn(
          'TPUEstimator only handles mode PREDICT for exporting when '
          f'`export_to_tpu` is `True`; Mode {mode} will be ignored for TPU.')
    if not self._export_to_cpu and not self._export_to_tpu:
      raise ValueError('One of export_to_cpu and export_to_tpu must be true.')
    if self._export_to_cpu:
      super()._add_meta_graph_for_mode(
          builder, input_receiver_fn_map, checkpoint_path, save_variables,
          mode=mode, export_tags=export_tags,
          check_variables=check_variables,
          strip_default_attrs=strip_default_attrs)
    if self._export_to_tpu and mode == ModeKeys.PREDICT:
      input_receiver_fn_map = {
          _INFERENCE_ON_TPU_MODE: input_receiver_fn_map[mode]}
      export_tags = [tf.saved_model.SERVING, tf.saved_model.TPU]
      mode = _INFERENCE_ON_TPU_MODE
      check_variables = save_variables = not self._export_to_cpu
      super()._add_meta_graph_for_mode(
          builder, input_receiver_fn_map, checkpoint_path,
          save_variables=save_variables, mode=mode, export_tags=export_tags,
          check_variables=check_variables,
          strip_default_attrs=strip_default_attrs)

  def _call_model_fn(self, features, labels, mode, config):
    if mode != _INFERENCE_ON_TPU_MODE:
      return super()._call_model_fn(features, labels, mode, config)
    with compat_tpu_inference.inference_context():
      if getattr(self._export_saved_model_api_version, 'value',
                 self._export_saved_model_api_version) == 1:
        return self._call_model_fn_for_inference(features, labels, mode,
                                                 config)
      return self._calls().call_model_fn(
          features, labels, ModeKeys.PREDICT, export=True, config=config,
          use_tpu=True)

  def _call_model_fn_for_inference(self, features, labels, mode, config):
    """The model_fn's PREDICT spec rewritten for one TPU core (export API
    V1)."""
    if mode != _INFERENCE_ON_TPU_MODE:
      raise ValueError(
          f'mode must be {_INFERENCE_ON_TPU_MODE}; got {mode}.')
    return tpu_inference.model_fn_on_tpu(
        lambda inputs: self._calls().call_model_fn(
            inputs, labels, ModeKeys.PREDICT, export=True, config=config),
        features)

  def _create_global_step(self, graph):
    return _create_global_step(graph)

  def _validate_features_in_predict_input(self, result):
    del result  # TPUEstimator does not warn.
