"""Estimator (and EstimatorV2) of the facade; TPUEstimator is in
tpu/tpu_estimator.py.

Same constructor arguments, checks and method contracts as
tensorflow_estimator 2.15's. Each call runs on one of two engines:
  * the graph engine (trainer/engines/graph): Estimator's own
    execution model, a TF1 graph and a MonitoredSession per call; used
    whenever the real Estimator would run on one device (no
    train_distribute / eval_distribute, TPUEstimator with use_tpu=False or
    no TPU found), on a task of a TF_CONFIG cluster (between-graph
    replication, the session on the task's server, trainer/engines/graph/cluster.py;
    without ps tasks each task's variables are its own),
    and for training under the strategies Estimator ran in its own graph
    (tf.compat.v1 ParameterServerStrategy, CentralStorageStrategy, a
    graph-mode MultiWorkerMirroredStrategy: trainer/engines/graph/distributed_train.py);
  * the tf2 runner (trainer/engines/tf2, through backend.py), for what else
    needs tf.distribute: a RunConfig train_distribute / eval_distribute
    strategy of several replicas, a TPUEstimator on a TPU.
Methods: train(input_fn, hooks, steps, max_steps, saving_listeners),
evaluate(input_fn, steps, hooks, checkpoint_path, name), predict(input_fn,
predict_keys, hooks, checkpoint_path, yield_single_examples),
export_saved_model / export_savedmodel / experimental_export_all_saved_models,
get_variable_value, get_variable_names, latest_checkpoint, eval_dir,
model_dir, config, params, model_fn. Subclasses may not override them.
"""

import collections
import contextlib
import copy
import os
import tempfile

import tensorflow as tf

from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.compat import tf_private
from trainer.compat import v2_behavior as behavior
from trainer.facade import run_config
from trainer.engines.graph import distributed_train
from trainer.engines.graph import engine as graph_engine
from trainer.engines.graph import program as program_lib
from trainer.facade.distributed import backend
from trainer.runtime import checkpoints
from trainer.runtime import strategy as strategy_lib

_v1 = tf.compat.v1
_MODEL_FN_ARGS = {'features', 'labels', 'mode', 'params', 'config'}
_ALLOWED_OVERRIDES = frozenset((
    'model_fn', '_create_and_assert_global_step', '_export_all_saved_models',
    '_tf_api_names', '_tf_api_names_v1', '_estimator_api_names',
    '_estimator_api_names_v1', '_estimator_api_constants',
    '_estimator_api_constants_v1', 'latest_checkpoint'))


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


VocabInfo = _v1.train.VocabInfo


def _warm_start_settings(warm_start_from):
  """WarmStartSettings for Estimator's warm_start_from argument, or None."""
  if warm_start_from is None:
    return None
  if isinstance(warm_start_from, (str, bytes)):
    variables_dir, variables_path = tf_private.saved_model_variables_path(
        warm_start_from)
    if _v1.gfile.Exists(os.path.join(variables_dir,
                                     tf.compat.as_text('variables.index'))):
      _v1.logging.info('Warm-starting from a SavedModel')
      return WarmStartSettings(ckpt_to_initialize_from=variables_path)
    return WarmStartSettings(ckpt_to_initialize_from=warm_start_from)
  if isinstance(warm_start_from, tuple) and getattr(
      warm_start_from, '_fields', None) == WarmStartSettings._fields:
    return warm_start_from
  raise ValueError('warm_start_from must be a string or a WarmStartSettings, '
                   f'instead got {type(warm_start_from)}')


def _config_with_model_dir(config, model_dir):
  """Estimator's rule: model_dir from the argument or config, else a new
  temporary directory; a default session config when there is none."""
  if config is None:
    config = run_config.RunConfig()
    _v1.logging.info('Using default config.')
  if not isinstance(config, run_config.RunConfig):
    raise ValueError('config must be an instance of `RunConfig`, but provided '
                     f'{config}.')
  if config.session_config is None:
    config = run_config.RunConfig.replace(
        config, session_config=program_lib.default_session_config())
  if model_dir is not None:
    model_dir = os.fspath(model_dir)
    if isinstance(model_dir, bytes):
      model_dir = model_dir.decode()
  if model_dir and config.model_dir is not None and (
      config.model_dir != model_dir):
    raise ValueError(
        '`model_dir` are set both in constructor and `RunConfig`, but with '
        f"different values. In constructor: '{model_dir}', in `RunConfig`: "
        f"'{config.model_dir}' ")
  if model_dir:
    return run_config.RunConfig.replace(config, model_dir=model_dir)
  if config.model_dir is None:
    model_dir = tempfile.mkdtemp()
    _v1.logging.warn('Using temporary folder as model directory: %s',
                     model_dir)
    return run_config.RunConfig.replace(config, model_dir=model_dir)
  return config


def load_global_step_from_checkpoint_dir(checkpoint_dir):
  """global_step of the latest checkpoint in checkpoint_dir; 0 if none (or
  if it cannot be read: Estimator's contract)."""
  try:
    return checkpoints.latest_checkpoint_step(checkpoint_dir) or 0
  except Exception:  # pylint: disable=broad-except  (Estimator's contract)
    return 0


def verify_model_fn_args(model_fn, params):
  """Raises ValueError as Estimator does for a model_fn it cannot call."""
  args = set(estimator_calls.fn_args(model_fn))
  if 'features' not in args:
    raise ValueError(f'model_fn ({model_fn}) must include features argument.')
  if params is not None and 'params' not in args:
    raise ValueError(f'model_fn ({model_fn}) does not include params '
                     f'argument, but params ({params}) is passed to '
                     'Estimator.')
  if params is None and 'params' in args:
    _v1.logging.warn("Estimator's model_fn (%s) includes params argument, but "
                     'params are not passed to Estimator.', model_fn)
  unexpected = list(args - _MODEL_FN_ARGS)
  if unexpected:
    raise ValueError(f'model_fn ({model_fn}) has following not expected '
                     f'args: {unexpected}')


def _assert_members_are_not_overridden(cls, obj):
  """ValueError if a subclass of Estimator overrides one of its members."""
  if obj.__class__.__name__ == 'TPUEstimator':
    return
  members = {m for m in dir(cls) if not m.startswith('__')}
  overridden = [
      m for m in (members & set(obj.__class__.__dict__)) - _ALLOWED_OVERRIDES
      if getattr(cls, m) != getattr(obj.__class__, m)]
  if overridden:
    raise ValueError('Subclasses of Estimator cannot override members of '
                     f'Estimator. {obj.__class__} does override {overridden}')


def _check_hooks_type(hooks):
  hooks = list(hooks or [])
  for hook in hooks:
    if not isinstance(hook, _v1.train.SessionRunHook):
      raise TypeError(f'Hooks must be a SessionRunHook, given: {hook}')
  return hooks


def _check_listeners_type(listeners):
  listeners = list(listeners or [])
  for listener in listeners:
    if not isinstance(listener, _v1.train.CheckpointSaverListener):
      raise TypeError('saving_listeners must be a list of '
                      f'CheckpointSaverListener, given: {listener}')
  return listeners


def _graph_strategy(config):
  """The train_distribute strategy Estimator.train runs on the graph engine
  (graph/distributed_train.py: tf.compat.v1 ParameterServerStrategy,
  CentralStorageStrategy, a MultiWorkerMirroredStrategy made in graph
  mode), else None."""
  strategy = config.train_distribute
  if strategy is None or not distributed_train.runs_in_graph(strategy):
    return None
  return strategy


def _check_not_coordinated(config, method):
  """ValueError, as Estimator's, for train() or evaluate() called directly
  with a strategy on a TF_CONFIG cluster, which only train_and_evaluate
  runs (through the Distribute Coordinator)."""
  if not run_config.uses_distribute_coordinator(config):
    return
  if 'evaluator' in config.cluster_spec.jobs:
    raise ValueError("'evaluator' job is not supported if you don't use "
                     '`train_and_evaluate`')
  raise ValueError('Only `STANDALONE_CLIENT` mode is supported when you call '
                   f'`estimator.{method}`')


class Estimator:
  """tf.estimator.Estimator (see the module docstring)."""

  def __init__(self, model_fn, model_dir=None, config=None, params=None,
               warm_start_from=None):
    self._assert_members_are_not_overridden()
    self._setup(model_fn, model_dir, config, params, warm_start_from,
                verify=True)

  def _setup(self, model_fn, model_dir, config, params, warm_start_from,
             verify):
    self._config = _config_with_model_dir(config, model_dir)
    self._model_dir = self._config.model_dir
    self._session_config = self._config.session_config
    self._train_distribution = self._config.train_distribute
    self._eval_distribution = self._config.eval_distribute
    if model_fn is None:
      raise ValueError('model_fn must be provided to Estimator.')
    if verify:
      verify_model_fn_args(model_fn, params)
    self._model_fn = model_fn
    self._params = copy.deepcopy(params or {})
    self._warm_start_settings = _warm_start_settings(warm_start_from)

  # -- properties -----------------------------------------------------------

  @property
  def model_dir(self):
    return self._model_dir

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
      return self._program().call_model_fn(features, labels, mode,
                                           config=config)

    return public_model_fn

  def eval_dir(self, name=None):
    return os.path.join(self._model_dir, 'eval' if not name else
                        'eval_' + name)

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

  def _for_worker_context(self, context, strategy):
    """A copy of this Estimator for a Distribute Coordinator task: its
    RunConfig with the task's settings and `strategy` (see
    RunConfig.for_worker_context)."""
    new = copy.copy(self)
    new._config = self._config.for_worker_context(context, strategy)
    new._train_distribution = new._config.train_distribute
    new._eval_distribution = new._config.eval_distribute
    new._params = copy.deepcopy(self._params)
    return new

  # -- engines --------------------------------------------------------------

  def _program(self):
    """What the graph engine runs for this Estimator."""
    return program_lib.Program(
        model_fn=self._model_fn, params=self._params, config=self._config,
        warm_start=self._warm_start_settings, tpu=self._tpu_settings())

  def _tpu_settings(self):
    return None  # TPUEstimator: its TPUSettings.

  def _needs_tf2(self, mode):
    """Whether `mode` runs under tf.distribute (the tf2 runner): with a
    strategy of several replicas, a TPU or multi-worker one. A one-replica
    strategy (OneDeviceStrategy, a MirroredStrategy of one device) runs on
    the graph engine, as Estimator runs it: in a Session, with the same
    results as without it. So does a TF_CONFIG cluster without a strategy,
    with or without ps tasks: each task its own graph (between-graph
    replication). predict() runs on one device whatever the strategies, as
    Estimator.predict."""
    if mode == specs.ModeKeys.PREDICT:
      return False
    if mode == specs.ModeKeys.TRAIN and _graph_strategy(self._config):
      return False
    distribution = (self._train_distribution if mode == specs.ModeKeys.TRAIN
                    else self._eval_distribution)
    return strategy_lib.is_distributed(distribution)

  def _backend(self):
    return backend.Backend(backend.Model(
        model_fn=self._model_fn, params=self._params, config=self._config,
        warm_start=self._warm_start_settings))

  @contextlib.contextmanager
  def _engine(self, mode):
    """The engine (trainer/engines/engine.py) of a `mode` call: the tf2
    engine, through distributed/backend.py and inside tf2_behavior(), where
    _needs_tf2 says; else the graph engine (under the train_distribute
    strategy Estimator ran in its graph, for training)."""
    if self._needs_tf2(mode):
      with behavior.tf2_behavior():
        yield self._backend()
      return
    strategy = (_graph_strategy(self._config)
                if mode == specs.ModeKeys.TRAIN else None)
    yield graph_engine.GraphEngine(self._program(), strategy=strategy)

  # -- train ----------------------------------------------------------------

  def train(self, input_fn, hooks=None, steps=None, max_steps=None,
            saving_listeners=None):
    """Trains; returns self (see tf.estimator.Estimator.train)."""
    if self.config.task_type in (run_config.TaskType.EVALUATOR,
                                 run_config.TaskType.PS):
      raise ValueError(
          'Train has been called wrong configuration. Please use '
          'tf.estimator.train_and_evaluate which calls proper API according '
          f'to given configuration. Current configuration: {self.config}.')
    if steps is not None and max_steps is not None:
      raise ValueError('Can not provide both steps and max_steps.')
    if steps is not None and steps <= 0:
      raise ValueError(f'Must specify steps > 0, given: {steps}')
    if max_steps is not None and max_steps <= 0:
      raise ValueError(f'Must specify max_steps > 0, given: {max_steps}')
    if max_steps is not None:
      start = load_global_step_from_checkpoint_dir(self._model_dir)
      if max_steps <= start:
        _v1.logging.info('Skipping training since max_steps has already '
                         'saved.')
        return self
    hooks = _check_hooks_type(hooks)
    hooks.extend(self._convert_train_steps_to_hooks(steps, max_steps))
    saving_listeners = _check_listeners_type(saving_listeners)
    _check_not_coordinated(self._config, 'train')
    with self._engine(specs.ModeKeys.TRAIN) as engine:
      loss = engine.train(input_fn=input_fn, hooks=hooks,
                          saving_listeners=saving_listeners)
    _v1.logging.info('Loss for final step: %s.', loss)
    return self

  def _convert_train_steps_to_hooks(self, steps, max_steps):
    if steps is None and max_steps is None:
      return []
    return [_v1.train.StopAtStepHook(steps, max_steps)]

  # -- evaluate, predict ----------------------------------------------------

  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    """Metrics of the latest (or the given) checkpoint, with global_step."""
    hooks = _check_hooks_type(hooks)
    if steps is not None and steps <= 0:
      raise ValueError(f'Must specify steps > 0, given: {steps}')
    with self._engine(specs.ModeKeys.EVAL) as engine:
      return engine.evaluate(steps, input_fn=input_fn,
                             checkpoint_path=checkpoint_path, hooks=hooks,
                             name=name)

  def predict(self, input_fn, predict_keys=None, hooks=None,
              checkpoint_path=None, yield_single_examples=True):
    """Yields predictions (see tf.estimator.Estimator.predict)."""
    hooks = _check_hooks_type(hooks)
    with self._engine(specs.ModeKeys.PREDICT) as engine:
      yield from engine.predict(
          input_fn=input_fn, checkpoint_path=checkpoint_path, hooks=hooks,
          yield_single_examples=yield_single_examples,
          predict_keys=predict_keys)

  # -- export ---------------------------------------------------------------

  def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                         assets_extra=None, as_text=False,
                         checkpoint_path=None,
                         experimental_mode=specs.ModeKeys.PREDICT):
    """Exports a SavedModel of `experimental_mode` under export_dir_base;
    returns its directory (bytes)."""
    if not serving_input_receiver_fn:
      raise ValueError('An input_receiver_fn must be defined.')
    return self._export_all_saved_models(
        export_dir_base, {experimental_mode: serving_input_receiver_fn},
        assets_extra=assets_extra, as_text=as_text,
        checkpoint_path=checkpoint_path, strip_default_attrs=True)

  def experimental_export_all_saved_models(self, export_dir_base,
                                           input_receiver_fn_map,
                                           assets_extra=None, as_text=False,
                                           checkpoint_path=None):
    """Exports one SavedModel with a meta graph per mode of the map."""
    return self._export_all_saved_models(
        export_dir_base, input_receiver_fn_map, assets_extra=assets_extra,
        as_text=as_text, checkpoint_path=checkpoint_path,
        strip_default_attrs=True)

  def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                        assets_extra=None, as_text=False,
                        checkpoint_path=None, strip_default_attrs=False):
    """Deprecated name of export_saved_model (tf.compat.v1)."""
    if not serving_input_receiver_fn:
      raise ValueError('An input_receiver_fn must be defined.')
    return self._export_all_saved_models(
        export_dir_base, {specs.ModeKeys.PREDICT: serving_input_receiver_fn},
        assets_extra=assets_extra, as_text=as_text,
        checkpoint_path=checkpoint_path,
        strip_default_attrs=strip_default_attrs)

  def _export_all_saved_models(self, export_dir_base, input_receiver_fn_map,
                               assets_extra=None, as_text=False,
                               checkpoint_path=None,
                               strip_default_attrs=True):
    # Every export runs on the graph engine, as Estimator exports.
    return graph_engine.GraphEngine(self._program()).export_all(
        export_dir_base, input_receiver_fn_map, assets_extra=assets_extra,
        as_text=as_text, checkpoint_path=checkpoint_path,
        strip_default_attrs=strip_default_attrs)


  def _assert_members_are_not_overridden(self):
    _assert_members_are_not_overridden(Estimator, self)


class _HiddenAttribute(property):
  """A class attribute whose access on an instance raises AttributeError."""

  def __init__(self, message):
    def hidden(unused_self):
      raise AttributeError(message)
    super().__init__(hidden)


class EstimatorV2(Estimator):
  """tf.estimator.Estimator: tf.compat.v1.estimator.Estimator without the
  deprecated export_savedmodel (as in tensorflow_estimator)."""
  __doc__ = Estimator.__doc__

  export_savedmodel = _HiddenAttribute(
      '`Estimator.export_savedmodel` has been deprecated. Please use '
      '`export_saved_model` instead.')

  def _assert_members_are_not_overridden(self):
    _assert_members_are_not_overridden(EstimatorV2, self)
