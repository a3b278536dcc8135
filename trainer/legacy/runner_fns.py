"""The model_fn and input_fn the facade hands the tf2 runner for one call.

They give the user's functions exactly what Estimator / TPUEstimator give
them, whatever the runner passes:
  * model_fn(features[, labels][, mode][, params][, config]) with params =
    the Estimator's params (TPUEstimator: plus batch_size and use_tpu) and
    config = the RunConfig; input_fn([mode][, params][, config]
    [, input_context]) likewise (TPUEstimator: params['batch_size'], and
    params['context'] when there are several replicas);
  * an EstimatorSpec becomes the TPUEstimatorSpec today's runner reads;
    what it cannot express (eval_metric_ops, a Scaffold with a saver,
    init_fn or init_op) raises RunnerFeatureMissing;
  * LoggingTensorHooks and NanTensorHooks (from train() or the spec) see
    their tensors' values at every step through the spec's host_call; any
    other hook in the spec fails before training;
  * warm_start_from runs in the spec's scaffold_fn, which the runner calls
    when model_dir has no checkpoint, as Estimator warm-starts;
  * variable updates nothing in the spec depends on, which a TF1 Session
    never runs but tf.function would, are refused (graph_check).
"""

import re

import numpy as np
import tensorflow as tf

from trainer.legacy import graph_check
from trainer.legacy import hooks as hooks_lib
from trainer.legacy import signatures
from trainer.legacy import specs

ModeKeys = specs.ModeKeys
_SCAFFOLD_FIELDS = ('init_op', 'init_feed_dict', 'init_fn', 'ready_op',
                    'ready_for_local_init_op', 'local_init_op', 'saver')


class RunnerFeatureMissing(NotImplementedError):
  """The facade needs something of the tf2 runner it does not offer yet."""


def missing(api, need):
  """RunnerFeatureMissing naming the Estimator API and what the runner lacks."""
  return RunnerFeatureMissing(
      f'{api} is not supported by trainer.legacy yet: the tf2 runner lacks '
      f'{need} (see trainer/legacy/backend.py).')


def check_scaffold(scaffold, where):
  """Raises RunnerFeatureMissing for a Scaffold the runner would ignore."""
  if scaffold is None:
    return
  used = [f for f in _SCAFFOLD_FIELDS if getattr(scaffold, f, None) is not None]
  if used:
    raise missing(f'Scaffold({", ".join(f + "=..." for f in used)}) in '
                  f'{where}', 'honouring a Scaffold\'s ' + ', '.join(used))


def _variable_names(key):
  return [v.name.split(':')[0] for v in tf.compat.v1.get_collection(key)]


class WarmStart:
  """warm_start_from of an Estimator: (checkpoint, vars, vocab, prev names)."""

  def __init__(self, settings):
    self.ckpt, self.vars, self.vocab, self.prev_names = settings
    if self.vocab:
      raise NotImplementedError(
          'WarmStartSettings(var_name_to_vocab_info=...) is not supported by '
          'trainer.legacy; warm-start vocabulary-remapped embeddings with '
          'tf.compat.v1.train.warm_start in a scaffold_fn.')

  def assignment_map(self, trainable, global_):
    """{checkpoint name: variable name} of the variables to warm-start."""
    selected = []
    if self.vars is None or isinstance(self.vars, str):
      pattern = self.vars or '.*'
      selected = [n for n in trainable if re.match(pattern, n)]
    elif all(isinstance(v, str) for v in self.vars):
      for pattern in self.vars:
        selected += [n for n in global_ if re.match(pattern, n)]
    else:
      selected = [v.name.split(':')[0] for v in self.vars]
    prev = self.prev_names or {}
    return {prev.get(n, n): n for n in dict.fromkeys(selected)}

  def apply(self, trainable, global_):
    path = self.ckpt
    if tf.io.gfile.isdir(path):
      path = tf.train.latest_checkpoint(path) or path
    mapping = self.assignment_map(trainable, global_)
    tf.compat.v1.logging.info('Warm-starting %d variable(s) from %s.',
                              len(mapping), path)
    tf.compat.v1.train.init_from_checkpoint(path, mapping)


class RunnerFns:
  """model_fn / input_fn for one runner call of one facade Estimator.

  model: trainer.legacy.backend.Model; input_fn: the user's input_fn of
  this call; train_hooks: the hooks of a train() call that run on the host
  (LoggingTensorHook, NanTensorHook).
  """

  def __init__(self, model, input_fn, train_hooks=()):
    self.model = model
    self._input_fn = input_fn
    self.train_hooks = list(train_hooks)
    self.host_hooks = None  # HostTensorHooks of the latest TRAIN trace.
    self.predictions_are_dict = None
    self._variable_names = ([], [])  # (trainable, global) of TRAIN.
    self._name_scope = ''

  # -- input_fn -------------------------------------------------------------

  def input_fn(self, params):
    """The user's input_fn with Estimator's arguments; a tf.data.Dataset."""
    model = self.model
    context = params.get('context')
    replicas = getattr(context, 'num_replicas_in_sync', 1)
    user_params = dict(model.params)
    if model.is_tpu:
      user_params['batch_size'] = params['batch_size'] if model.batch_size(
          params['mode']) else None
      if replicas > 1 or model.use_tpu:
        user_params['context'] = context
    distributed = replicas > 1 or model.config.train_distribute is not None
    result = signatures.call_input_fn(
        self._input_fn, params['mode'], user_params,
        model.config, input_context=context if distributed else None,
        require_params=model.is_tpu)
    if not isinstance(result, tf.data.Dataset):
      raise TypeError(
          f'input_fn returned {type(result).__name__}, not a tf.data.Dataset: '
          'under trainer.legacy input_fn must return the Dataset itself '
          '(not iterator.get_next() tensors, which TF2 evaluates once). '
          'Return the dataset; it works on TF 2.15 too.')
    return result

  # -- model_fn -------------------------------------------------------------

  def model_fn(self, features, labels, mode, params):
    """The user's model_fn with Estimator's arguments; a TPUEstimatorSpec."""
    model = self.model
    user_params = dict(model.params)
    if model.is_tpu:
      user_params.update(batch_size=params['batch_size'],
                         use_tpu=params['use_tpu'])
    step_before = None
    if mode == ModeKeys.TRAIN:
      step_before = tf.identity(tf.compat.v1.train.get_global_step())
    graph = tf.compat.v1.get_default_graph()
    ops_before = len(graph.get_operations())
    self._name_scope = graph.get_name_scope()  # TF1 names are relative to it.
    spec = signatures.call_model_fn(model.model_fn, features, labels, mode,
                                    user_params, model.config)
    spec = self._as_tpu_spec(spec, mode)
    if mode == ModeKeys.TRAIN:
      self._variable_names = (
          _variable_names(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES),
          _variable_names(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES))
      spec = self._with_host_hooks(spec, step_before)
      fetches = [spec.train_op, spec.loss] + tf.nest.flatten(
          spec.host_call[1] if spec.host_call else [])
    elif mode == ModeKeys.EVAL:
      if spec.evaluation_hooks:
        raise missing(f'{type(spec.evaluation_hooks[0]).__name__} in '
                      'evaluation_hooks', 'hooks in evaluate()')
      fetches = [spec.loss] + tf.nest.flatten(
          spec.eval_metrics[1] if spec.eval_metrics else [])
    else:
      if spec.prediction_hooks:
        raise missing(f'{type(spec.prediction_hooks[0]).__name__} in '
                      'prediction_hooks', 'hooks in predict()')
      self.predictions_are_dict = isinstance(spec.predictions, dict)
      fetches = tf.nest.flatten(spec.predictions)
    graph_check.check(graph, ops_before, fetches, mode)
    return spec._replace(scaffold_fn=self._scaffold_fn(spec.scaffold_fn))

  def _as_tpu_spec(self, spec, mode):
    """TPUEstimatorSpec for today's runner; errors for what it cannot do."""
    fields = set(getattr(spec, '_fields', ()))
    if isinstance(spec, specs.TPUEstimatorSpec):
      return spec
    if fields == set(specs.TPUEstimatorSpec._fields):  # TF <= 2.15's class.
      return specs.TPUEstimatorSpec(**spec._asdict())
    if fields != set(specs.EstimatorSpec._fields):
      raise ValueError('model_fn should return an EstimatorSpec or a '
                       f'TPUEstimatorSpec; got {type(spec).__name__}.')
    if spec.eval_metric_ops and mode == ModeKeys.EVAL:
      raise missing('EstimatorSpec(eval_metric_ops=...)',
                    'evaluating metric ops built inside the model_fn')
    check_scaffold(spec.scaffold, 'EstimatorSpec.scaffold')
    return specs.TPUEstimatorSpec(
        mode, predictions=spec.predictions, loss=spec.loss,
        train_op=spec.train_op, export_outputs=spec.export_outputs,
        training_hooks=spec.training_chief_hooks + spec.training_hooks,
        evaluation_hooks=spec.evaluation_hooks,
        prediction_hooks=spec.prediction_hooks)

  def _scaffold_fn(self, user_scaffold_fn):
    warm_start = self.model.warm_start
    if user_scaffold_fn is None and warm_start is None:
      return None

    def scaffold_fn():
      scaffold = user_scaffold_fn() if user_scaffold_fn else None
      check_scaffold(scaffold, 'the scaffold_fn\'s Scaffold')
      if warm_start is not None:
        warm_start.apply(*self._variable_names)
      return scaffold or tf.compat.v1.train.Scaffold()

    return scaffold_fn

  # -- hooks through host_call ---------------------------------------------

  def _with_host_hooks(self, spec, step_before):
    """spec whose host_call also feeds the host-driven hooks every step."""
    hooks = list(self.train_hooks)
    for hook in spec.training_hooks:
      if not hooks_lib.is_tensor_hook(hook):
        raise hooks_lib.unsupported(hook, 'the spec\'s training_hooks')
      hooks.append(hook)
    if not hooks:
      self.host_hooks = None
      return spec
    fetches = [{tag: _as_step_tensor(value, hook, step_before,
                                     self._name_scope)
                for tag, value in hooks_lib.tensor_hook_fetches(hook).items()}
               for hook in hooks]
    self.host_hooks = host_hooks = hooks_lib.HostTensorHooks(hooks)
    hook_flat = [tf.expand_dims(t, 0) for d in fetches for t in d.values()]
    user_fn, user_tensors = spec.host_call or (None, [])
    user_flat = tf.nest.flatten(user_tensors)

    def host_step(*values):  # One row per replica; the first one's values.
      it = iter(values)
      host_hooks.step([{tag: next(it)[0] for tag in d}
                       for d in fetches])
      return np.int64(0)

    def host_fn(*args):
      outputs = []
      if user_fn is not None:
        user_args = tf.nest.pack_sequence_as(user_tensors,
                                             list(args[:len(user_flat)]))
        result = (user_fn(**user_args) if isinstance(user_args, dict)
                  else user_fn(*user_args))
        if result is not None:
          outputs.append(result)
      outputs.append(tf.compat.v1.py_func(
          host_step, list(args[len(user_flat):]), tf.int64, stateful=True))
      return outputs

    return spec._replace(host_call=(host_fn, user_flat + hook_flat))


def _as_step_tensor(value, hook, step_before, scope):
  """The tensor a hook names, in the model_fn's graph (names as TF1 does:
  relative to `scope`, the name scope the model_fn was called in)."""
  global_step = tf.compat.v1.train.get_global_step()
  graph = tf.compat.v1.get_default_graph()
  name = value if isinstance(value, str) else None
  if name is None and value is global_step:
    return step_before
  if isinstance(value, tf.Variable):
    return tf.identity(value)
  if isinstance(value, tf.Tensor):
    if value.graph is not graph:
      raise ValueError(f'{type(hook).__name__}: tensor {value!r} is not of '
                       'the model_fn\'s graph.')
    return value
  base = name.split(':')[0]
  if base == global_step.name.split(':')[0]:
    return step_before
  full = f'{scope}/{name}' if scope else name
  try:
    return graph.as_graph_element(full if ':' in full else full + ':0')
  except (KeyError, ValueError):
    pass
  for variable in tf.compat.v1.global_variables():
    if variable.name.split(':')[0] == base:
      return tf.identity(variable)
  raise ValueError(f'{type(hook).__name__}: no tensor or variable named '
                   f'{name!r} in the model_fn\'s graph.')
