"""Estimator (and EstimatorV2) of the facade; TPUEstimator is in tpu/tpu_estimator.py.

Laid out as tensorflow_estimator 2.15's estimator.py: the same constructor
arguments and checks, the same module-level helpers (published at
tensorflow_estimator.python.estimator.estimator), and the same methods,
which call one another at the reference's points with its arguments, so
that a subclass that overrides or replaces one sees what it sees under
Estimator (tests/facade/subclass_contract_test.py):
  __init__   self.__class__._assert_members_are_not_overridden(self), then
             maybe_overwrite_model_dir_and_session_config(config, model_dir)
  train      _convert_train_steps_to_hooks(steps, max_steps),
             _train_model(input_fn, hooks, saving_listeners) ->
             _train_model_default (no train_distribute) or
             _train_model_distributed -> in a new graph:
             _create_and_assert_global_step(g) -> _create_global_step(g),
             _get_features_and_labels_from_input_fn(input_fn, 'train') ->
             _call_input_fn(input_fn, 'train'), _call_model_fn(features,
             labels, 'train', config), _train_with_estimator_spec(spec,
             worker_hooks, hooks, global_step, saving_listeners)
  evaluate   _actual_eval(input_fn, strategy, steps, hooks, checkpoint_path,
             name) -> _convert_eval_steps_to_hooks(steps),
             _evaluate_build_graph(input_fn, hooks, checkpoint_path) ->
             _create_and_assert_global_step, _call_model_fn_eval(input_fn,
             config) -> _get_features_and_labels_from_input_fn,
             _call_model_fn; _maybe_warm_start(checkpoint_path);
             eval_dir(name), _evaluate_run(checkpoint_path, scaffold,
             update_op, eval_dict, all_hooks, output_dir)
  predict    _create_and_assert_global_step, _get_features_from_input_fn ->
             _call_input_fn, _validate_features_in_predict_input;
             _call_model_fn(features, None, 'infer', config),
             _maybe_warm_start, _extract_keys, _extract_batch_length
  export     export_saved_model / export_savedmodel /
             experimental_export_all_saved_models ->
             _export_all_saved_models -> latest_checkpoint(),
             _add_meta_graph_for_mode(builder, input_receiver_fn_map,
             checkpoint_path, save_variables, mode=..., strip_default_attrs=)
             per mode (train, eval, infer) -> _create_and_assert_global_step,
             _call_model_fn(features=, labels=, mode=, config=)
Each call runs on one of two engines:
  * the graph engine (trainer/engines/graph): Estimator's own
    execution model, a TF1 graph and a MonitoredSession per call, through
    the methods above; used whenever the real Estimator would run on one
    device (no train_distribute / eval_distribute, TPUEstimator with
    use_tpu=False or no TPU found), on a task of a TF_CONFIG cluster
    (between-graph replication, trainer/engines/graph/cluster.py), and for training
    under the strategies Estimator ran in its own graph (tf.compat.v1
    ParameterServerStrategy, CentralStorageStrategy, a graph-mode
    MultiWorkerMirroredStrategy: trainer/engines/graph/distributed_train.py, which
    calls _call_input_fn, _create_and_assert_global_step and
    _call_model_fn);
  * the tf2 engine (trainer/engines/tf2, through distributed/backend.py), for what else
    needs tf.distribute: a RunConfig train_distribute / eval_distribute
    strategy of several replicas, a TPUEstimator on a TPU. It calls the
    model_fn and input_fn itself: a subclass that overrides a method of
    that call's path is refused before the call (UnsupportedApiError naming
    the method; _refuse_overrides_on_tf2).
"""

import collections
import contextlib
import copy
import os
import tempfile

import tensorflow as tf

from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.compat import estimator_reexports
from trainer.compat import tf_private
from trainer.compat import v2_behavior as behavior
from trainer.engines.graph import added_hooks as graph_hooks
from trainer.engines.graph import distributed_train
from trainer.engines.graph import evaluate as graph_evaluate
from trainer.engines.graph import export as graph_export
from trainer.engines.graph import graph_replicas
from trainer.engines.graph import inputs as graph_inputs
from trainer.engines.graph import program as program_lib
from trainer.engines.graph import train as graph_train
from trainer.facade import run_config
from trainer.facade import unsupported
from trainer.facade.distributed import backend
from trainer.guard import checkpoint_fit
from trainer.runtime import checkpoints
from trainer.runtime import eval_summaries
from trainer.runtime import predictions as predictions_lib
from trainer.runtime import strategy as strategy_lib

_v1 = tf.compat.v1
ModeKeys = specs.ModeKeys
_VALID_MODEL_FN_ARGS = frozenset(
    ('features', 'labels', 'mode', 'params', 'self', 'config'))
_ALLOWED_OVERRIDES = frozenset((
    'model_fn', '_create_and_assert_global_step', '_export_all_saved_models',
    '_tf_api_names', '_tf_api_names_v1', '_estimator_api_names',
    '_estimator_api_names_v1', '_estimator_api_constants',
    '_estimator_api_constants_v1', 'latest_checkpoint'))
# Estimator's usage gauges (tf.estimator's monitoring cells; the
# reference's canned Estimators set the second one).
_estimator_api_gauge = estimator_reexports.LazyGauge(
    'bool', '/tensorflow/api/estimator', 'estimator api usage', 'method')
_canned_estimator_api_gauge = estimator_reexports.LazyGauge(
    'string', '/tensorflow/api/estimator/canned_estimator',
    'Gauge to track the type of canned estimator used', 'ClassType')


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


# -- module-level helpers (tensorflow_estimator's names) ----------------------

def _get_default_warm_start_settings(warm_start_from):
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


def maybe_overwrite_model_dir_and_session_config(config, model_dir):
  """Estimator's rule for its RunConfig: `config` (a default RunConfig when
  None) with model_dir from the argument or config, else a new temporary
  directory, and the default session config when it has none. ValueError
  if config is no RunConfig, or the two model_dirs differ."""
  if config is None:
    config = run_config.RunConfig()
    _v1.logging.info('Using default config.')
  if not isinstance(config, run_config.RunConfig):
    raise ValueError('config must be an instance of `RunConfig`, but provided '
                     f'{config}.')
  if config.session_config is None:
    config = run_config.RunConfig.replace(
        config, session_config=run_config.get_default_session_config())
  model_dir = run_config.path_to_str(model_dir)
  if isinstance(model_dir, bytes):
    model_dir = model_dir.decode()
  if model_dir is not None and (
      getattr(config, 'model_dir', None) is not None and
      config.model_dir != model_dir):
    raise ValueError(
        '`model_dir` are set both in constructor and `RunConfig`, but with '
        f"different values. In constructor: '{model_dir}', in `RunConfig`: "
        f"'{config.model_dir}' ")
  if model_dir:
    return run_config.RunConfig.replace(config, model_dir=model_dir)
  if getattr(config, 'model_dir', None) is None:
    model_dir = tempfile.mkdtemp()
    _v1.logging.warn('Using temporary folder as model directory: %s',
                     model_dir)
    return run_config.RunConfig.replace(config, model_dir=model_dir)
  return config


def _load_global_step_from_checkpoint_dir(checkpoint_dir):
  """global_step of the latest checkpoint in checkpoint_dir; 0 if none (or
  if it cannot be read: Estimator's contract)."""
  try:
    return checkpoints.latest_checkpoint_step(checkpoint_dir) or 0
  except Exception:  # pylint: disable=broad-except  (Estimator's contract)
    return 0


load_global_step_from_checkpoint_dir = _load_global_step_from_checkpoint_dir


def _verify_model_fn_args(model_fn, params):
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
  unexpected = list(args - _VALID_MODEL_FN_ARGS)
  if unexpected:
    raise ValueError(f'model_fn ({model_fn}) has following not expected '
                     f'args: {unexpected}')


verify_model_fn_args = _verify_model_fn_args


def _assert_members_are_not_overridden(cls, obj):
  """ValueError if obj's class overrides a member of `cls` (Estimator or
  EstimatorV2) but the few Estimator allows; TPUEstimator is exempt."""
  if obj.__class__.__name__ == 'TPUEstimator':
    return
  members = {m for m in dir(cls) if not m.startswith('__')}
  overridden = [
      m for m in (members & set(obj.__class__.__dict__)) - _ALLOWED_OVERRIDES
      if getattr(cls, m) != getattr(obj.__class__, m)]
  if overridden:
    raise ValueError('Subclasses of Estimator cannot override members of '
                     f'Estimator. {obj.__class__} does override {overridden}')


def _check_checkpoint_available(model_dir):
  if not tf.train.latest_checkpoint(model_dir):
    raise ValueError(
        f'Could not find trained model in model_dir: {model_dir}.')


def _check_hooks_type(hooks):
  """hooks as a list; TypeError for one that is no SessionRunHook."""
  hooks = list(hooks or [])
  for hook in hooks:
    if not isinstance(hook, _v1.train.SessionRunHook):
      raise TypeError(f'Hooks must be a SessionRunHook, given: {hook}')
  return hooks


def _check_listeners_type(saving_listeners):
  """saving_listeners as a list; TypeError for one that is no
  CheckpointSaverListener."""
  listeners = list(saving_listeners or [])
  for listener in listeners:
    if not isinstance(listener, _v1.train.CheckpointSaverListener):
      raise TypeError('saving_listeners must be a list of '
                      f'CheckpointSaverListener, given: {listener}')
  return listeners


def _get_replica_device_setter(config):
  """Estimator's default device function: a replica device setter over the
  cluster's ps tasks, or None without any."""
  if not config.num_ps_replicas:
    return None
  return program_lib.device_fn(config.replace(device_fn=None))


def _verify_and_create_loss_metric(eval_metric_ops, loss, distribution=None):
  """eval_metric_ops with Estimator's `loss` metric (the mean of `loss`);
  ValueError if it has one named so."""
  if specs.LOSS_METRIC_KEY in eval_metric_ops:
    raise ValueError(
        f'Metric with name "{specs.LOSS_METRIC_KEY}" is not allowed, because '
        'Estimator already defines a default metric with the same name.')
  if distribution is None:
    eval_metric_ops[specs.LOSS_METRIC_KEY] = _v1.metrics.mean(loss)
  else:
    eval_metric_ops[specs.LOSS_METRIC_KEY] = (
        distribution.extended.call_for_each_replica(_v1.metrics.mean,
                                                    args=(loss,)))
  return eval_metric_ops


def _extract_metric_update_ops(eval_dict, distribution=None):
  """(one op running every update op, {name: value tensor}) of
  {name: (value, update)} metrics, in name order."""
  update_ops, value_ops = [], {}
  for name, value in sorted(eval_dict.items()):
    value_ops[name] = value[0]
    update_ops.append(distribution.group(value[1]) if distribution
                      else value[1])
  return (tf.group(*update_ops) if update_ops else None), value_ops


def _dict_to_str(dictionary):
  """'k1 = v1, k2 = v2' of a metrics dict in key order (bytes values left
  out), as Estimator logs it."""
  return eval_summaries.dict_to_str(dictionary)


def _write_dict_to_summary(output_dir, dictionary, current_global_step):
  """Writes a metrics dict as summaries of step current_global_step."""
  eval_summaries.write_dict_to_summary(output_dir, dictionary,
                                       current_global_step)


def _write_checkpoint_path_to_summary(output_dir, checkpoint_path,
                                      current_global_step):
  """Writes the evaluated checkpoint's path as a text summary."""
  eval_summaries.write_checkpoint_path_to_summary(output_dir, checkpoint_path,
                                                  current_global_step)


def _has_dataset_or_queue_runner(maybe_tensor):
  """Whether predict input ends by itself (a tf.data iterator or queue)."""
  return graph_inputs.uses_dataset_or_queue(maybe_tensor)


def _get_loss_reduce_op_for_reporting():
  """How a loss computed across replicas is reduced for logging."""
  if tf_private.loss_scaled_by_optimizer(_v1.get_default_graph()):
    return _v1.distribute.get_loss_reduction()
  return tf.distribute.ReduceOp.SUM


# A Scaffold's ready_for_local_init_op inside a replica.
create_per_replica_ready_for_local_init_op = (
    distributed_train.per_replica_ready_for_local_init_op)


def _combine_distributed_scaffold(grouped_scaffold, distribution):
  """One Scaffold of the per-replica Scaffolds a strategy's model_fn calls
  returned."""
  return distributed_train.combined_scaffold(grouped_scaffold, distribution)


def _graph_strategy(config, model_fn, mode=ModeKeys.TRAIN):
  """The train_distribute (in EVAL: eval_distribute) strategy the graph
  engine runs `mode` under, else None: in training, tf.compat.v1
  ParameterServerStrategy, CentralStorageStrategy, a
  MultiWorkerMirroredStrategy made in graph mode (distributed_train.py);
  in both modes, a MirroredStrategy of several replicas for a model_fn
  whose replicas only a graph builds (model_to_estimator's:
  graph_replicas.py), as a twin made in graph mode."""
  train = mode == ModeKeys.TRAIN
  strategy = config.train_distribute if train else config.eval_distribute
  if strategy is None:
    return None
  if train and distributed_train.runs_in_graph(strategy):
    return strategy
  if strategy_lib.is_distributed(strategy) and (
      graph_replicas.runs_in_graph(strategy, model_fn)):
    return graph_replicas.graph_twin(strategy)
  return None


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


# The methods each tf2-runner call would bypass (see the module docstring).
_TF2_BYPASSED = {
    ModeKeys.TRAIN: (
        '_train_model_default', '_train_model_distributed',
        '_actual_train_model_distributed', '_train_with_estimator_spec',
        '_create_and_assert_global_step', '_create_global_step',
        '_get_features_and_labels_from_input_fn',
        '_get_iterator_from_input_fn', '_call_input_fn', '_call_model_fn'),
    ModeKeys.EVAL: (
        '_evaluate_build_graph', '_call_model_fn_eval',
        '_call_model_fn_eval_distributed', '_evaluate_run',
        '_maybe_warm_start', '_create_and_assert_global_step',
        '_create_global_step', '_get_features_and_labels_from_input_fn',
        '_get_iterator_from_input_fn', '_call_input_fn', '_call_model_fn'),
    ModeKeys.PREDICT: (
        '_create_and_assert_global_step', '_create_global_step',
        '_get_features_from_input_fn', '_validate_features_in_predict_input',
        '_call_input_fn', '_call_model_fn', '_maybe_warm_start',
        '_extract_keys', '_extract_batch_length'),
}


def _own_class(cls):
  """The facade's class a (user) subclass derives from."""
  return next(c for c in cls.__mro__
              if c.__module__.startswith('trainer.facade.'))


class _EstimatorProgram(program_lib.Program):
  """The graph engine's Program for the parts it builds itself (training
  under a graph-mode strategy, a cluster task): calls the model_fn, the
  input_fn and makes global_step through the Estimator's methods."""

  def __init__(self, estimator, **kwargs):
    super().__init__(**kwargs)
    self.estimator = estimator

  def call_input_fn(self, input_fn, mode, input_context=None):
    return self.estimator._call_input_fn(input_fn, mode, input_context)  # pylint: disable=protected-access

  def call_model_fn(self, features, labels, mode, export=False, config=None,
                    use_tpu=False):
    if export or use_tpu:
      raise ValueError('EstimatorFns.call_model_fn: exports and TPU calls go '
                       'through Estimator._call_model_fn.')
    return self.estimator._call_model_fn(  # pylint: disable=protected-access
        features, labels, mode, config or self.estimator.config)

  def create_global_step(self, graph):
    return self.estimator._create_and_assert_global_step(graph)  # pylint: disable=protected-access


class Estimator:
  """tf.estimator.Estimator (see the module docstring)."""

  def __init__(self, model_fn, model_dir=None, config=None, params=None,
               warm_start_from=None):
    _estimator_api_gauge.get_cell('init').set(True)
    self.__class__._assert_members_are_not_overridden(self)  # pylint: disable=protected-access
    self._config = maybe_overwrite_model_dir_and_session_config(config,
                                                                model_dir)
    self._train_distribution = self._config.train_distribute
    self._eval_distribution = self._config.eval_distribute
    self._model_dir = self._config.model_dir
    self._session_config = self._config.session_config
    _v1.logging.info('Using config: %s', str(vars(self._config)))
    self._device_fn = (self._config.device_fn or
                       _get_replica_device_setter(self._config))
    if model_fn is None:
      raise ValueError('model_fn must be provided to Estimator.')
    _verify_model_fn_args(model_fn, params)
    self._model_fn = model_fn
    self._params = copy.deepcopy(params or {})
    self._warm_start_settings = _get_default_warm_start_settings(
        warm_start_from)
    # How _call_model_fn calls the model_fn now (_exporting_for_tpu).
    self._model_fn_call = {}

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
    """model_fn(features, labels, mode, config) through _call_model_fn."""

    def public_model_fn(features, labels, mode, config):
      return self._call_model_fn(features, labels, mode, config)

    return public_model_fn

  def get_variable_value(self, name):
    """The value of variable `name` in the latest checkpoint (numpy)."""
    _check_checkpoint_available(self.model_dir)
    return tf.train.load_variable(self.model_dir, name)

  def get_variable_names(self):
    """Names of the variables in the latest checkpoint."""
    _check_checkpoint_available(self.model_dir)
    return [name for name, _ in tf.train.list_variables(self.model_dir)]

  def latest_checkpoint(self):
    return tf.train.latest_checkpoint(self.model_dir)

  def eval_dir(self, name=None):
    return os.path.join(self._model_dir, 'eval' if not name else
                        'eval_' + name)

  # -- engines --------------------------------------------------------------

  def _program(self):
    """What the graph engine runs for this Estimator (calling through its
    methods)."""
    return _EstimatorProgram(
        self, model_fn=self._model_fn, params=self._params,
        config=self._config, warm_start=self._warm_start_settings,
        tpu=self._tpu_settings())

  def _calls(self):
    """How the model_fn and input_fn are called, without the methods
    (what _call_model_fn and _call_input_fn run)."""
    return program_lib.Program(
        model_fn=self._model_fn, params=self._params, config=self._config,
        warm_start=self._warm_start_settings, tpu=self._tpu_settings())

  def _tpu_settings(self):
    return None  # TPUEstimator: its TPUSettings.

  def _for_worker_context(self, context, strategy):
    """A copy of this Estimator for a Distribute Coordinator task: its
    RunConfig with the task's settings and `strategy` (see
    RunConfig.for_worker_context)."""
    new = copy.copy(self)
    new._config = self._config.for_worker_context(context, strategy)
    new._train_distribution = new._config.train_distribute
    new._eval_distribution = new._config.eval_distribute
    new._session_config = new._config.session_config
    new._params = copy.deepcopy(self._params)
    new._model_fn_call = {}
    return new

  def _needs_tf2(self, mode):
    """Whether `mode` runs under tf.distribute (the tf2 runner): with a
    strategy of several replicas, a TPU or multi-worker one. A one-replica
    strategy (OneDeviceStrategy, a MirroredStrategy of one device) runs on
    the graph engine, as Estimator runs it: in a Session, with the same
    results as without it. So does a TF_CONFIG cluster without a strategy,
    with or without ps tasks: each task its own graph (between-graph
    replication). predict() runs on one device whatever the strategies, as
    Estimator.predict."""
    if mode == ModeKeys.PREDICT:
      return False
    if _graph_strategy(self._config, self._model_fn, mode):
      return False
    distribution = (self._train_distribution if mode == ModeKeys.TRAIN
                    else self._eval_distribution)
    return strategy_lib.is_distributed(distribution)

  def _refuse_overrides_on_tf2(self, mode, why):
    """UnsupportedApiError if this object's class overrides a method the
    tf2 runner's call in `mode` bypasses; `why`: what runs the call."""
    own = _own_class(type(self))
    overridden = [m for m in _TF2_BYPASSED[mode]
                  if getattr(type(self), m, None) is not getattr(own, m,
                                                                 None)]
    if overridden:
      name = type(self).__name__
      raise unsupported.error_for(
          f'{name}.{overridden[0]} (an override of {own.__name__}'
          f'.{overridden[0]}, in {mode})',
          f'{why}, the facade runs the call on its tf2 runner, which calls '
          f'the model_fn and input_fn itself and not {name}\'s '
          f'{", ".join(overridden)}',
          'move that logic into the model_fn or input_fn, or run without a '
          'strategy of several replicas (on the graph engine the override '
          'is called as under Estimator)')

  def _backend(self):
    return backend.Backend(backend.Model(
        model_fn=self._model_fn, params=self._params, config=self._config,
        warm_start=self._warm_start_settings))

  def _tf2_reason(self, mode):
    strategy = (self._train_distribution if mode == ModeKeys.TRAIN
                else self._eval_distribution)
    return f'with {type(strategy).__name__} of several replicas'

  # -- train ----------------------------------------------------------------

  def train(self, input_fn, hooks=None, steps=None, max_steps=None,
            saving_listeners=None):
    """Trains; returns self (see tf.estimator.Estimator.train)."""
    _estimator_api_gauge.get_cell('train').set(True)
    if self.config.task_type in (run_config.TaskType.EVALUATOR,
                                 run_config.TaskType.PS):
      raise ValueError(
          'Train has been called wrong configuration. Please use '
          'tf.estimator.train_and_evaluate which calls proper API according '
          f'to given configuration. Current configuration: {self.config}.')
    with tf_private.graph_mode():
      if steps is not None and max_steps is not None:
        raise ValueError('Can not provide both steps and max_steps.')
      if steps is not None and steps <= 0:
        raise ValueError(f'Must specify steps > 0, given: {steps}')
      if max_steps is not None and max_steps <= 0:
        raise ValueError(f'Must specify max_steps > 0, given: {max_steps}')
      if max_steps is not None:
        start = _load_global_step_from_checkpoint_dir(self._model_dir)
        if max_steps <= start:
          _v1.logging.info('Skipping training since max_steps has already '
                           'saved.')
          return self
      hooks = _check_hooks_type(hooks)
      hooks.extend(self._convert_train_steps_to_hooks(steps, max_steps))
      saving_listeners = _check_listeners_type(saving_listeners)
      _check_not_coordinated(self._config, 'train')
      loss = self._train_model(input_fn, hooks, saving_listeners)
      _v1.logging.info('Loss for final step: %s.', loss)
      return self

  def _convert_train_steps_to_hooks(self, steps, max_steps):
    if steps is None and max_steps is None:
      return []
    return [_v1.train.StopAtStepHook(steps, max_steps)]

  def _train_model(self, input_fn, hooks, saving_listeners):
    if self._needs_tf2(ModeKeys.TRAIN):
      self._refuse_overrides_on_tf2(ModeKeys.TRAIN,
                                    self._tf2_reason(ModeKeys.TRAIN))
      with behavior.tf2_behavior():
        return self._backend().train(input_fn=input_fn, hooks=hooks,
                                     saving_listeners=saving_listeners)
    if self._train_distribution:
      return self._train_model_distributed(input_fn, hooks, saving_listeners)
    return self._train_model_default(input_fn, hooks, saving_listeners)

  def _train_model_default(self, input_fn, hooks, saving_listeners):
    """Trains in a new graph and MonitoredTrainingSession (no strategy);
    the last step's loss."""
    worker_hooks = []
    with tf.Graph().as_default() as g, g.device(self._device_fn):
      _v1.random.set_random_seed(self._config.tf_random_seed)
      global_step_tensor = self._create_and_assert_global_step(g)
      if global_step_tensor is not None:
        tf_private.create_global_step_read(g)
      features, labels, input_hooks = (
          self._get_features_and_labels_from_input_fn(input_fn,
                                                      ModeKeys.TRAIN))
      worker_hooks.extend(input_hooks)
      estimator_spec = self._call_model_fn(features, labels, ModeKeys.TRAIN,
                                           self.config)
      global_step_tensor = _v1.train.get_global_step(g)
      return self._train_with_estimator_spec(estimator_spec, worker_hooks,
                                             hooks, global_step_tensor,
                                             saving_listeners)

  def _train_model_distributed(self, input_fn, hooks, saving_listeners):
    """Trains under the RunConfig's train_distribute strategy on the graph
    engine: one Estimator runs in its own graph (_graph_strategy); a
    strategy of one replica trains as without it."""
    strategy = _graph_strategy(self._config, self._model_fn)
    if strategy is None:
      return self._train_model_default(input_fn, hooks, saving_listeners)
    return self._actual_train_model_distributed(strategy, input_fn, hooks,
                                                saving_listeners)

  def _actual_train_model_distributed(self, strategy, input_fn, hooks,
                                      saving_listeners):
    return distributed_train.train(self._program(), strategy, input_fn, hooks,
                                   saving_listeners)

  def _train_with_estimator_spec_distributed(self, estimator_spec,
                                             worker_hooks, saving_listener):
    """Trains a spec built under a MultiWorkerMirroredStrategy: the session
    itself checkpoints, without listeners."""
    if saving_listener:
      raise ValueError('Saving listenor is not supported by the current '
                       'Distribution Strategies.')
    return graph_train.train_with_spec(
        self._program(), estimator_spec, worker_hooks, [],
        _v1.train.get_global_step(), [], session_checkpoints=True)

  def _train_with_estimator_spec(self, estimator_spec, worker_hooks, hooks,
                                 global_step_tensor, saving_listeners):
    """Runs the training loop of a TRAIN spec built in the default graph."""
    return graph_train.train_with_spec(self._program(), estimator_spec,
                                       worker_hooks, hooks,
                                       global_step_tensor, saving_listeners)

  # -- evaluate ---------------------------------------------------------------

  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    """Metrics of the latest (or the given) checkpoint, with global_step."""
    _estimator_api_gauge.get_cell('evaluate').set(True)
    return self._actual_eval(input_fn, strategy=self._eval_distribution,
                             steps=steps, hooks=hooks,
                             checkpoint_path=checkpoint_path, name=name)

  def _actual_eval(self, input_fn, strategy=None, steps=None, hooks=None,
                   checkpoint_path=None, name=None):
    """Evaluates (see evaluate); `strategy` is the eval_distribute one."""
    hooks = _check_hooks_type(hooks)
    if self._needs_tf2(ModeKeys.EVAL):
      if steps is not None and steps <= 0:
        raise ValueError(f'Must specify steps > 0, given: {steps}')
      self._refuse_overrides_on_tf2(ModeKeys.EVAL,
                                    self._tf2_reason(ModeKeys.EVAL))
      with behavior.tf2_behavior():
        return self._backend().evaluate(steps, input_fn=input_fn,
                                        checkpoint_path=checkpoint_path,
                                        hooks=hooks, name=name)
    # One replica evaluates as without it (_needs_tf2); a model_fn whose
    # replicas only a graph builds runs under the strategy's graph twin.
    strategy = _graph_strategy(self._config, self._model_fn, ModeKeys.EVAL)
    self._eval_graph_strategy = strategy
    scope = strategy.scope() if strategy else contextlib.nullcontext()
    with tf_private.graph_mode():
      hooks.extend(self._convert_eval_steps_to_hooks(steps))
      if not checkpoint_path:
        latest_path = tf.train.latest_checkpoint(self._model_dir)
        if not latest_path:
          _v1.logging.info(
              f'Could not find trained model in model_dir: {self._model_dir}'
              ', running initialization to evaluate.')
        checkpoint_path = latest_path
      with tf.Graph().as_default(), scope:
        scaffold, update_op, eval_dict, all_hooks = (
            self._evaluate_build_graph(input_fn, hooks, checkpoint_path))
        return self._evaluate_run(
            checkpoint_path=checkpoint_path, scaffold=scaffold,
            update_op=update_op, eval_dict=eval_dict, all_hooks=all_hooks,
            output_dir=self.eval_dir(name))

  def _convert_eval_steps_to_hooks(self, steps):
    return graph_evaluate.steps_hooks(steps)

  def _evaluate_build_graph(self, input_fn, hooks=None, checkpoint_path=None):
    """Builds evaluation in the default graph; (scaffold, update_op,
    eval_dict, all_hooks)."""
    _v1.random.set_random_seed(self._config.tf_random_seed)
    self._create_and_assert_global_step(_v1.get_default_graph())
    if self._eval_distribution:
      scaffold, evaluation_hooks, input_hooks, update_op, eval_dict = (
          self._call_model_fn_eval_distributed(input_fn, self.config))
    else:
      scaffold, evaluation_hooks, input_hooks, update_op, eval_dict = (
          self._call_model_fn_eval(input_fn, self.config))
    global_step_tensor = _v1.train.get_global_step(_v1.get_default_graph())
    self._maybe_warm_start(checkpoint_path)
    if _v1.GraphKeys.GLOBAL_STEP in eval_dict:
      raise ValueError(
          'Metric with name `global_step` is not allowed, because Estimator '
          'already defines a default metric with the same name.')
    eval_dict[_v1.GraphKeys.GLOBAL_STEP] = global_step_tensor
    all_hooks = list(input_hooks)
    all_hooks.extend(hooks or [])
    all_hooks.extend(list(evaluation_hooks or []))
    if scaffold and scaffold.local_init_op:
      tf_private.get_or_create_eval_step()
      scaffold = _v1.train.Scaffold(
          local_init_op=tf.group(scaffold.local_init_op,
                                 _v1.train.Scaffold.default_local_init_op()),
          copy_from_scaffold=scaffold)
    return scaffold, update_op, eval_dict, all_hooks

  def _call_model_fn_eval(self, input_fn, config):
    """(scaffold, evaluation_hooks, input_hooks, update_op, eval_dict) of
    the model_fn's EVAL spec."""
    features, labels, input_hooks = (
        self._get_features_and_labels_from_input_fn(input_fn, ModeKeys.EVAL))
    estimator_spec = self._call_model_fn(features, labels, ModeKeys.EVAL,
                                         config)
    eval_metric_ops = _verify_and_create_loss_metric(
        dict(estimator_spec.eval_metric_ops or {}), estimator_spec.loss)
    update_op, eval_dict = _extract_metric_update_ops(eval_metric_ops)
    return (estimator_spec.scaffold, estimator_spec.evaluation_hooks,
            input_hooks, update_op, eval_dict)

  def _call_model_fn_eval_distributed(self, input_fn, config):
    """As _call_model_fn_eval, once per replica of the graph twin of the
    eval_distribute strategy (_graph_strategy: a model_fn whose replicas
    only a graph builds), the replicas' metrics and `loss` combined as
    Estimator combines them; an eval_distribute strategy of one replica
    evaluates as without it (_needs_tf2)."""
    strategy = getattr(self, '_eval_graph_strategy', None)
    if strategy is None:
      return self._call_model_fn_eval(input_fn, config)
    iterator, input_hooks = self._get_iterator_from_input_fn(
        input_fn, ModeKeys.EVAL, strategy)
    features, labels = graph_inputs.split(iterator.get_next())
    grouped = strategy.extended.call_for_each_replica(
        self._call_model_fn, args=(features, labels, ModeKeys.EVAL, config))
    eval_metric_ops = _verify_and_create_loss_metric(
        dict(grouped.eval_metric_ops or {}), grouped.loss, strategy)
    update_op, eval_dict = _extract_metric_update_ops(eval_metric_ops,
                                                      strategy)
    evaluation_hooks = [strategy.experimental_local_results(h)[0]
                        for h in grouped.evaluation_hooks or ()]
    return (_combine_distributed_scaffold(grouped.scaffold, strategy),
            evaluation_hooks, input_hooks, update_op, eval_dict)

  def _evaluate_run(self, checkpoint_path, scaffold, update_op, eval_dict,
                    all_hooks, output_dir):
    """Runs a built evaluation; writes its summaries to output_dir."""
    return graph_evaluate.run(
        self._config, self._session_config, checkpoint_path, scaffold,
        update_op, eval_dict, all_hooks, output_dir)

  def _maybe_warm_start(self, checkpoint_path):
    if not checkpoint_path and self._warm_start_settings:
      _v1.logging.info('Warm-starting with WarmStartSettings: %s',
                       self._warm_start_settings)
      _v1.train.warm_start(*self._warm_start_settings)

  # -- predict --------------------------------------------------------------

  def predict(self, input_fn, predict_keys=None, hooks=None,
              checkpoint_path=None, yield_single_examples=True):
    """Yields predictions (see tf.estimator.Estimator.predict)."""
    _estimator_api_gauge.get_cell('predict').set(True)
    if self._needs_tf2(ModeKeys.PREDICT):  # TPUEstimator on a TPU.
      self._refuse_overrides_on_tf2(ModeKeys.PREDICT,
                                    self._tf2_reason(ModeKeys.PREDICT))
      with behavior.tf2_behavior():
        yield from self._backend().predict(
            input_fn=input_fn, checkpoint_path=checkpoint_path,
            hooks=_check_hooks_type(hooks),
            yield_single_examples=yield_single_examples,
            predict_keys=predict_keys)
      return
    with tf_private.graph_mode():
      hooks = _check_hooks_type(hooks)
      if not checkpoint_path:
        checkpoint_path = tf.train.latest_checkpoint(self._model_dir)
      if not checkpoint_path:
        _v1.logging.info(
            f'Could not find trained model in model_dir: {self._model_dir}, '
            'running initialization to predict.')
      with tf.Graph().as_default() as g:
        _v1.random.set_random_seed(self._config.tf_random_seed)
        self._create_and_assert_global_step(g)
        features, input_hooks = self._get_features_from_input_fn(
            input_fn, ModeKeys.PREDICT)
        estimator_spec = self._call_model_fn(features, None,
                                             ModeKeys.PREDICT, self.config)
        self._maybe_warm_start(checkpoint_path)
        predictions = self._extract_keys(estimator_spec.predictions,
                                         predict_keys)
        all_hooks = list(input_hooks)
        all_hooks.extend(hooks)
        all_hooks.extend(list(estimator_spec.prediction_hooks or []))
        checkpoint_fit.check_saver(estimator_spec.scaffold.saver,
                                   checkpoint_path)
        creator = _v1.train.ChiefSessionCreator(
            checkpoint_filename_with_path=checkpoint_path,
            master=self._config.master, scaffold=estimator_spec.scaffold,
            config=self._session_config)
        with _v1.train.MonitoredSession(session_creator=creator,
                                        hooks=all_hooks) as mon_sess:
          while not mon_sess.should_stop():
            preds_evaluated = mon_sess.run(predictions)
            if not yield_single_examples:
              yield preds_evaluated
            elif not isinstance(predictions, dict):
              yield from preds_evaluated
            else:
              for i in range(self._extract_batch_length(preds_evaluated)):
                yield {key: value[i]
                       for key, value in preds_evaluated.items()}

  def _extract_batch_length(self, preds_evaluated):
    return predictions_lib.batch_length(preds_evaluated)

  def _extract_keys(self, predictions, predict_keys):
    if not predict_keys:
      return predictions
    if not isinstance(predictions, dict):
      raise ValueError(
          'predict_keys argument is not valid in case of non-dict '
          'predictions.')
    existing_keys = predictions.keys()
    kept = {k: v for k, v in predictions.items() if k in predict_keys}
    if not kept:
      raise ValueError(f'Expected to run at least one output from '
                       f'{existing_keys}, provided {predict_keys}.')
    return kept

  # -- inputs, model_fn, global_step ----------------------------------------

  def _get_features_from_input_fn(self, input_fn, mode):
    """(features, input hooks) of the input_fn's result (labels dropped)."""
    result = self._call_input_fn(input_fn, mode)
    result, _, hooks = graph_inputs.features_and_labels(result)
    self._validate_features_in_predict_input(result)
    return result, hooks

  def _validate_features_in_predict_input(self, result):
    if not _has_dataset_or_queue_runner(result):
      _v1.logging.warning(
          'Input graph does not use tf.data.Dataset or contain a QueueRunner. '
          'That means predict yields forever. This is probably a mistake.')

  def _get_iterator_from_input_fn(self, input_fn, mode, distribution=None):
    """(iterator, input hooks) of the input_fn's dataset; under
    `distribution`, the strategy's iterator over it."""
    if distribution is not None:
      iterator = distribution.make_input_fn_iterator(
          lambda input_context: self._call_input_fn(input_fn, mode,
                                                    input_context))
      return iterator, [distributed_train.IteratorInitializerHook(iterator)]
    result = self._call_input_fn(input_fn, mode)
    iterator = _v1.data.make_initializable_iterator(result)
    return iterator, [graph_hooks.DatasetInitializerHook(iterator)]

  def _get_features_and_labels_from_input_fn(self, input_fn, mode):
    """(features, labels or None, input hooks) of the input_fn's result."""
    return graph_inputs.features_and_labels(
        self._call_input_fn(input_fn, mode))

  def _create_global_step(self, graph):
    return _v1.train.create_global_step(graph)

  def _create_and_assert_global_step(self, graph):
    step = self._create_global_step(graph)
    # The reference asserts both: its AssertionError, also under python -O.
    if step is not _v1.train.get_global_step():
      raise AssertionError('_create_global_step did not make the graph\'s '
                           'global step.')
    if not step.dtype.is_integer:
      raise AssertionError(f'the global step is {step.dtype.name}, not an '
                           'integer.')
    return step

  def _call_input_fn(self, input_fn, mode, input_context=None):
    """The input_fn's result: called with the arguments it names (mode,
    params, config, input_context), on the CPU."""
    return self._calls().call_input_fn(input_fn, mode, input_context)

  def _call_model_fn(self, features, labels, mode, config):
    """The model_fn's EstimatorSpec, called with the arguments it names;
    ValueError if it returns anything else."""
    return self._calls().call_model_fn(features, labels, mode, config=config,
                                       **self._model_fn_call)

  def _assert_members_are_not_overridden(self):
    _assert_members_are_not_overridden(Estimator, self)

  # -- export ---------------------------------------------------------------

  def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                         assets_extra=None, as_text=False,
                         checkpoint_path=None,
                         experimental_mode=ModeKeys.PREDICT):
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

  def _export_all_saved_models(self, export_dir_base, input_receiver_fn_map,
                               assets_extra=None, as_text=False,
                               checkpoint_path=None,
                               strip_default_attrs=True):
    """Writes one SavedModel with a meta graph per mode of the map (TRAIN,
    EVAL, then PREDICT; the first saves the variables); its directory."""
    with tf_private.graph_mode():
      if not checkpoint_path:
        checkpoint_path = self.latest_checkpoint()
      if not checkpoint_path:
        if self._warm_start_settings:
          checkpoint_path = self._warm_start_settings.ckpt_to_initialize_from
          if _v1.gfile.IsDirectory(checkpoint_path):
            checkpoint_path = tf.train.latest_checkpoint(checkpoint_path)
        else:
          raise ValueError(
              f"Couldn't find trained model at {self._model_dir}.")
      with graph_export.saved_model_builder(
          export_dir_base, as_text, assets_extra) as (builder, export_dir):
        save_variables = True
        for mode in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
          if input_receiver_fn_map.get(mode):
            self._add_meta_graph_for_mode(
                builder, input_receiver_fn_map, checkpoint_path,
                save_variables, mode=mode,
                strip_default_attrs=strip_default_attrs)
            save_variables = False
        if save_variables:
          raise ValueError('No valid modes for exporting found. Got '
                           f'{input_receiver_fn_map.keys()}.')
      return export_dir

  def _add_meta_graph_for_mode(self, builder, input_receiver_fn_map,
                               checkpoint_path, save_variables=True,
                               mode=ModeKeys.PREDICT, export_tags=None,
                               check_variables=True,
                               strip_default_attrs=True):
    """Adds `mode`'s meta graph to `builder`: the receiver, the model_fn in
    that mode, its signatures; restores the checkpoint first
    (check_variables) and saves the variables with it (save_variables)."""
    if export_tags is None:
      export_tags = graph_export.tags(mode)
    input_receiver_fn = input_receiver_fn_map[mode]
    with tf.Graph().as_default() as g:
      self._create_and_assert_global_step(g)
      _v1.random.set_random_seed(self._config.tf_random_seed)
      input_receiver = input_receiver_fn()
      self._model_fn_call = {'export': True}
      try:
        estimator_spec = self._call_model_fn(
            features=input_receiver.features,
            labels=getattr(input_receiver, 'labels', None), mode=mode,
            config=self.config)
      finally:
        self._model_fn_call = {}
      graph_export.add_meta_graph(
          builder, estimator_spec, input_receiver, mode, export_tags,
          checkpoint_path, save_variables=save_variables,
          check_variables=check_variables,
          strip_default_attrs=strip_default_attrs,
          session_config=self._session_config)

  def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                        assets_extra=None, as_text=False,
                        checkpoint_path=None, strip_default_attrs=False):
    """Deprecated name of export_saved_model (tf.compat.v1)."""
    if not serving_input_receiver_fn:
      raise ValueError('An input_receiver_fn must be defined.')
    return self._export_all_saved_models(
        export_dir_base, {ModeKeys.PREDICT: serving_input_receiver_fn},
        assets_extra=assets_extra, as_text=as_text,
        checkpoint_path=checkpoint_path,
        strip_default_attrs=strip_default_attrs)


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
