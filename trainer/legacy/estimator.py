"""Estimator and TPUEstimator of the facade, backed by the tf2 runner.

Same constructor arguments, checks and method contracts as Estimator's:
  train(input_fn, hooks, steps, max_steps, saving_listeners)  resumes from
      model_dir; stops after `steps` more or at `max_steps` (skipped if
      already there); checkpoints when it starts, as RunConfig says, and at
      the end; returns self;
  evaluate(input_fn, steps, hooks, checkpoint_path, name)  returns
      {metrics..., 'loss', 'global_step'} and writes model_dir/eval[_name];
  predict(input_fn, predict_keys, hooks, checkpoint_path,
      yield_single_examples)  yields per-example dicts (or values);
  export_saved_model(...)  returns the export path as bytes;
  get_variable_value, get_variable_names, latest_checkpoint, eval_dir,
  model_dir, config, params, model_fn.
The work is done by the tf2 runner through trainer/legacy/backend.py; what
it cannot do raises a NotImplementedError naming the API.
"""

import collections
import copy
import os
import tempfile

from absl import logging
import tensorflow as tf

from trainer.compat import estimator_calls
from trainer.legacy import backend
from trainer.legacy import cluster
from trainer.legacy import hooks as hooks_lib
from trainer.legacy import run_config
from trainer.legacy import runner_fns
from trainer.legacy import specs

ModeKeys = specs.ModeKeys
_RESERVED_PARAMS_KEYS = ('batch_size', 'context')


class WarmStartSettings(collections.namedtuple('WarmStartSettings', [
    'ckpt_to_initialize_from', 'vars_to_warm_start',
    'var_name_to_vocab_info', 'var_name_to_prev_var_name'])):
  """tf.estimator.WarmStartSettings: what to warm-start training from."""

  def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start='.*',
              var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
    if not ckpt_to_initialize_from:
      raise ValueError(
          '`ckpt_to_initialize_from` MUST be set in WarmStartSettings')
    return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                           var_name_to_vocab_info or {},
                           var_name_to_prev_var_name or {})


VocabInfo = tf.compat.v1.train.VocabInfo


def _warm_start_settings(warm_start_from):
  """WarmStartSettings for Estimator's warm_start_from argument, or None."""
  if warm_start_from is None:
    return None
  if isinstance(warm_start_from, (str, bytes, os.PathLike)):
    path = os.fsdecode(warm_start_from)
    variables = os.path.join(path, 'variables', 'variables')
    if tf.io.gfile.exists(variables + '.index'):  # A SavedModel.
      path = variables
    return WarmStartSettings(path)
  if isinstance(warm_start_from, WarmStartSettings):
    return warm_start_from
  raise ValueError('warm_start_from must be a string or a WarmStartSettings, '
                   f'instead got {type(warm_start_from)}')


def _config_with_model_dir(config, model_dir):
  """Estimator's rule: model_dir from the argument or config, else temporary."""
  if config is None:
    config = run_config.RunConfig()
  if not isinstance(config, run_config.RunConfig):
    raise ValueError('config must be an instance of `RunConfig`, but provided '
                     f'{config}.')
  if model_dir is not None:
    model_dir = os.fspath(model_dir)
  if model_dir and config.model_dir and model_dir != config.model_dir:
    raise ValueError(
        '`model_dir` are set both in constructor and `RunConfig`, but with '
        f"different values. In constructor: '{model_dir}', in `RunConfig`: "
        f"'{config.model_dir}' ")
  if model_dir:
    return config.replace(model_dir=model_dir)
  if not config.model_dir:
    model_dir = tempfile.mkdtemp()
    logging.warning('Using temporary folder as model directory: %s',
                    model_dir)
    return config.replace(model_dir=model_dir)
  return config


def load_global_step_from_checkpoint_dir(checkpoint_dir):
  """global_step of the latest checkpoint in checkpoint_dir; 0 if none."""
  try:
    path = tf.train.latest_checkpoint(checkpoint_dir)
    return int(tf.train.load_checkpoint(path).get_tensor('global_step'))
  except Exception:  # pylint: disable=broad-except  (Estimator's contract)
    return 0


_MODEL_FN_ARGS = {'features', 'labels', 'mode', 'params', 'config'}


def _verify_model_fn_args(model_fn, params):
  """Raises ValueError as Estimator does for a model_fn it cannot call."""
  estimator_calls.check_model_fn(model_fn)
  args = set(estimator_calls.fn_args(model_fn))
  if params is not None and 'params' not in args:
    raise ValueError(f'model_fn ({model_fn}) does not include params '
                     f'argument, but params ({params}) is passed to '
                     'Estimator.')
  unexpected = sorted(args - _MODEL_FN_ARGS)
  if unexpected:
    raise ValueError(f'model_fn ({model_fn}) has following not expected '
                     f'args: {unexpected}')


class Estimator:
  """tf.estimator.Estimator on the tf2 runner (see the module docstring)."""

  def __init__(self, model_fn, model_dir=None, config=None, params=None,
               warm_start_from=None):
    self._config = _config_with_model_dir(config, model_dir)
    logging.info('Using config: %s', self._config)
    if model_fn is None:
      raise ValueError('model_fn must be provided to Estimator.')
    _verify_model_fn_args(model_fn, params)
    self._model_fn = model_fn
    self._params = copy.deepcopy(params or {})
    settings = _warm_start_settings(warm_start_from)
    self._warm_start = runner_fns.WarmStart(settings) if settings else None
    self._backend = backend.Backend(self._model())

  def _model(self):
    return backend.Model(model_fn=self._model_fn, params=self._params,
                         config=self._config, warm_start=self._warm_start)

  # -- properties -----------------------------------------------------------

  @property
  def model_dir(self):
    return self._config.model_dir

  @property
  def config(self):
    return copy.deepcopy(self._config)

  @property
  def params(self):
    return copy.deepcopy(self._params)

  @property
  def model_fn(self):
    """model_fn(features, labels, mode, config) bound to self.params."""

    def public_model_fn(features, labels, mode, config):
      return estimator_calls.call_model_fn(self._model_fn, features, labels,
                                           mode, self.params, config)

    return public_model_fn

  def eval_dir(self, name=None):
    return os.path.join(self.model_dir, 'eval_' + name if name else 'eval')

  def latest_checkpoint(self):
    return tf.train.latest_checkpoint(self.model_dir)

  def _check_checkpoint(self):
    if not tf.train.latest_checkpoint(self.model_dir):
      raise ValueError(
          f'Could not find trained model in model_dir: {self.model_dir}.')

  def get_variable_value(self, name):
    """The value of variable `name` in the latest checkpoint (numpy)."""
    self._check_checkpoint()
    return tf.train.load_variable(self.model_dir, name)

  def get_variable_names(self):
    """Names of the variables in the latest checkpoint."""
    self._check_checkpoint()
    return [name for name, _ in tf.train.list_variables(self.model_dir)]

  # -- train ----------------------------------------------------------------

  def train(self, input_fn, hooks=None, steps=None, max_steps=None,
            saving_listeners=None):
    """Trains; see the module docstring. Returns self."""
    if self._config.task_type in (run_config.TaskType.EVALUATOR,
                                  run_config.TaskType.PS):
      raise ValueError(
          'Train has been called wrong configuration. Please use '
          'tf.estimator.train_and_evaluate which calls proper API according '
          f'to given configuration. Current configuration: {self._config}.')
    if steps is not None and max_steps is not None:
      raise ValueError('Can not provide both steps and max_steps.')
    if steps is not None and steps <= 0:
      raise ValueError(f'Must specify steps > 0, given: {steps}')
    if max_steps is not None and max_steps <= 0:
      raise ValueError(f'Must specify max_steps > 0, given: {max_steps}')
    start = load_global_step_from_checkpoint_dir(self.model_dir)
    if max_steps is not None and max_steps <= start:
      logging.info('Skipping training since max_steps has already saved.')
      return self
    hooks = hooks_lib.check_hooks(hooks, 'train(hooks=...)')
    hooks_lib.refuse_unsupported(hooks, 'train(hooks=...)')
    listeners = list(saving_listeners or [])
    saver_hooks = [h for h in hooks
                   if isinstance(h, hooks_lib.CheckpointSaverHook)]
    if listeners and not saver_hooks and not (
        self._config.save_checkpoints_steps or
        self._config.save_checkpoints_secs):
      raise ValueError(
          'There should be a CheckpointSaverHook to use saving_listeners. '
          'Please set one of the RunConfig.save_checkpoints_steps or '
          'RunConfig.save_checkpoints_secs.')
    stops = [s for s in (max_steps, None if steps is None else start + steps,
                         hooks_lib.stop_step(hooks, start)) if s is not None]
    step = self._backend.train(
        input_fn, to_step=min(stops) if stops else None, hooks=hooks,
        listeners=listeners)
    logging.info('Trained to global step %d.', step)
    return self

  # -- evaluate, predict, export --------------------------------------------

  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    """Metrics of the latest (or the given) checkpoint; see the docstring."""
    hooks = hooks_lib.check_hooks(hooks, 'evaluate(hooks=...)')
    hooks_lib.refuse_unsupported(hooks, 'evaluate(hooks=...)')
    if steps is not None and steps <= 0:
      raise ValueError(f'Must specify steps > 0, given: {steps}')
    return self._backend.evaluate(input_fn, steps=steps,
                                  checkpoint_path=checkpoint_path,
                                  hooks=hooks, name=name)

  def predict(self, input_fn, predict_keys=None, hooks=None,
              checkpoint_path=None, yield_single_examples=True):
    """Yields predictions; see the module docstring."""
    hooks = hooks_lib.check_hooks(hooks, 'predict(hooks=...)')
    hooks_lib.refuse_unsupported(hooks, 'predict(hooks=...)')
    yield from self._backend.predict(
        input_fn, checkpoint_path=checkpoint_path, hooks=hooks,
        yield_single_examples=yield_single_examples,
        predict_keys=predict_keys)

  def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                         assets_extra=None, as_text=False,
                         checkpoint_path=None,
                         experimental_mode=ModeKeys.PREDICT):
    """Exports a SavedModel under export_dir_base/TIMESTAMP; its path, bytes."""
    if not serving_input_receiver_fn:
      raise ValueError('An input_receiver_fn must be defined.')
    if experimental_mode != ModeKeys.PREDICT or assets_extra or as_text:
      raise NotImplementedError(
          'export_saved_model(experimental_mode=..., assets_extra=..., '
          'as_text=True) is not supported by trainer.legacy: export the '
          'PREDICT graph only, as a binary SavedModel.')
    path = self._backend.export(os.fspath(export_dir_base),
                                serving_input_receiver_fn,
                                checkpoint_path=checkpoint_path)
    return tf.compat.as_bytes(path)

  def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                        assets_extra=None, as_text=False,
                        checkpoint_path=None, strip_default_attrs=False):
    """Deprecated name of export_saved_model (tf.compat.v1)."""
    del strip_default_attrs
    return self.export_saved_model(export_dir_base, serving_input_receiver_fn,
                                   assets_extra, as_text, checkpoint_path)

  def experimental_export_all_saved_models(self, *args, **kwargs):
    del args, kwargs
    raise NotImplementedError(
        'Estimator.experimental_export_all_saved_models is not supported by '
        'trainer.legacy: call export_saved_model (PREDICT graph) instead.')


class TPUEstimator(Estimator):
  """tf.compat.v1.estimator.tpu.TPUEstimator on the tf2 runner.

  The model_fn gets params['batch_size'] (per replica) and
  params['use_tpu'] = False (the strategy, not CrossShardOptimizer,
  combines gradients); input_fn gets params['batch_size'] and, with several
  replicas, params['context'].
  """

  def __init__(self, model_fn=None, model_dir=None, config=None, params=None,
               use_tpu=True, train_batch_size=None, eval_batch_size=None,
               predict_batch_size=None, batch_axis=None, eval_on_tpu=True,
               export_to_tpu=True, export_to_cpu=True, warm_start_from=None,
               embedding_config_spec=None,
               export_saved_model_api_version=1):
    del batch_axis, eval_on_tpu, export_to_cpu, export_saved_model_api_version
    if config is None or not isinstance(config, run_config.TPURunConfig):
      raise ValueError(
          '`config` must be provided with type `tpu_config.RunConfig`')
    if params is not None and any(k in params for k in _RESERVED_PARAMS_KEYS):
      raise ValueError(f'{list(_RESERVED_PARAMS_KEYS)} are reserved keys but '
                       f'existed in params {params}.')
    if embedding_config_spec is not None:
      raise NotImplementedError(
          'TPUEstimator(embedding_config_spec=...) (TPU embeddings) is not '
          'supported by trainer.legacy: use tf.tpu.experimental.embedding.'
          'TPUEmbedding under TPUStrategy, or a regular embedding lookup.')
    if use_tpu and cluster.is_fallback(config.cluster):
      cluster.log_use_tpu_fallback()
      use_tpu = False
    if use_tpu and train_batch_size is None:
      raise ValueError('`train_batch_size` cannot be `None`')
    for name, value in (('train_batch_size', train_batch_size),
                        ('eval_batch_size', eval_batch_size),
                        ('predict_batch_size', predict_batch_size)):
      if value is not None and (not isinstance(value, int) or value <= 0):
        raise ValueError(f'{name} must be a positive integer, got {value!r}.')
    self._use_tpu = bool(use_tpu)
    self._batch_sizes = (train_batch_size, eval_batch_size, predict_batch_size)
    self._export_to_tpu = export_to_tpu
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     params=params, warm_start_from=warm_start_from)

  def _model(self):
    train, eval_, predict = self._batch_sizes
    return backend.Model(
        model_fn=self._model_fn, params=self._params, config=self._config,
        is_tpu=True, use_tpu=self._use_tpu, train_batch_size=train,
        eval_batch_size=eval_, predict_batch_size=predict,
        warm_start=self._warm_start)
