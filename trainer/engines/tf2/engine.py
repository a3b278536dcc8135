"""The tf2 engine: an unmodified TPUEstimator model_fn / input_fn pair under
tf.distribute.

`Tf2Engine` is an Engine (trainer/engines/engine.py): what --runner=tf2
runs (a Runner of trainer/runtime/modes.py) and the engine of the Estimator
facade's calls under a strategy (trainer/facade/distributed/): it behaves
as TPUEstimator does, with TF2 machinery. It owns what the parts share: the
strategy, the model_fn's variables (model_fn_adapter.ModelFnModule), input,
the spec's Scaffold (honoured in every mode, scaffold.py) and TF1 name-based
checkpoints in model_dir (name_checkpoints.py). The parts:
  * train.py: the model_fn's own train_op, iterations_per_loop steps per
    tf.function call, host_call on the host, SessionRunHooks
    (hook_runner.py) and Estimator's summaries (summaries.py), following
    the loop policy (trainer/runtime/loop.py);
  * evaluate.py: evaluation (eval_metrics' metric_fn on the host, or an
    EstimatorSpec's eval_metric_ops in the step) and prediction;
  * export.py: a SavedModel from a serving_input_receiver_fn, with the
    spec's export_outputs as signatures.

The engine reads its own settings from a typed trainer.config.Config
(`settings`); the params dict is made only at the model_fn / input_fn call.
What the model_fn and input_fn see: `model_params` (the Estimator facade
passes the user's params dict, unchanged) or, from trainer.main, the
settings' params dict (Config.as_params) plus the mode for the input_fn;
plus what TPUEstimator adds: the batch_size key (per replica, split once
by trainer/runtime/strategy.per_replica_batches), use_tpu = False for the
model_fn (the strategy, not CrossShardOptimizer, combines gradients across
replicas) and the context key for the input_fn, a TPUContext that is also
a tf.distribute.InputContext (input_context.py).
"""

import contextlib
import copy
import os

from absl import logging
import tensorflow as tf

from trainer.api import estimator_names as estimator_compat
from trainer.compat import collective_keys
from trainer.compat import estimator_calls
from trainer.compat import op_seeds
from trainer.compat import tf_private
from trainer.engines.tf2 import evaluate
from trainer.engines.tf2 import export
from trainer.engines.tf2 import input_context
from trainer.engines.tf2 import input_tensors
from trainer.engines.tf2 import model_fn_adapter
from trainer.engines.tf2 import name_checkpoints
from trainer.engines.tf2 import scaffold as scaffold_lib
from trainer.engines.tf2 import spec as spec_lib
from trainer.engines.tf2 import train
from trainer.models import inputs
from trainer.runtime import checkpoints
from trainer.runtime import loop
from trainer.runtime import strategy as strategy_lib
from trainer.runtime import tf_config

_MODES = (estimator_compat.ModeKeys.TRAIN, estimator_compat.ModeKeys.EVAL,
          estimator_compat.ModeKeys.PREDICT)


def _input_fns(input_fn):
  """{mode: input_fn} from one input_fn for every mode or such a dict."""
  if input_fn is None or callable(input_fn):
    return {mode: input_fn for mode in _MODES}
  unknown = set(input_fn) - set(_MODES)
  if unknown:
    raise ValueError(f'input_fn modes {sorted(unknown)} are not among '
                     f'{_MODES}.')
  return {mode: input_fn.get(mode) for mode in _MODES}


class Tf2Engine:
  """train / evaluate / predict / export of a model_fn under one strategy."""

  def __init__(self, settings, model_fn, input_fn=None, *, model_params=None,
               config=None, strategy=None, serving_input_fn=None):
    """settings: the run's trainer.config.Config (model_dir, seed, batch
    sizes, iterations_per_loop, checkpoint cadence, TPU...). input_fn: the
    default input_fn, or {mode: input_fn}; each call may pass its own.
    model_params: the dict the model_fn and input_fn see, passed through
    as given (default: settings.as_params(), with the mode for the
    input_fn). config: what a model_fn taking `config` gets (a RunConfig).
    strategy: (strategy, kind) to use instead of the one settings choose.
    serving_input_fn: export()'s default serving_input_receiver_fn (the
    front end's; trainer.main's is the built-in signature).
    """
    self.settings = settings
    self._serving_input_fn = serving_input_fn
    self._model_fn = model_fn
    self._input_fns = _input_fns(input_fn)
    self._model_params = model_params
    self.config = config
    op_seeds.set_global_seed(settings.seed)
    self.strategy, self.strategy_kind = strategy or (
        strategy_lib.make_strategy(settings.cluster))
    # Another MirroredStrategy of this process may have used its keys.
    collective_keys.use_own_keys(self.strategy)
    self.jit = strategy_lib.choose_jit(self.strategy_kind,
                                       settings.jit_compile)
    self.num_replicas = self.strategy.num_replicas_in_sync
    logging.info('tf2 runner: %s strategy, %d replica(s).',
                 self.strategy_kind, self.num_replicas)
    self._per_replica_batch = strategy_lib.per_replica_batches(
        settings, self.num_replicas, 'tf2 runner')
    self.model_dir = settings.model_dir
    if not tf_config.is_chief_task() and (  # Keeps its own copy, apart;
        tf_config.task_type() != 'evaluator'):  # a sidecar reads model_dir.
      self.model_dir = os.path.join(settings.model_dir,
                                    f'worker-{tf_config.task_index()}')
    with self.strategy.scope():
      self.module = model_fn_adapter.ModelFnModule(model_fn, config=config)
    self.checkpoints = name_checkpoints.ModuleCheckpoints(
        self.module, self.model_dir, settings.model_dir,
        settings.keep_checkpoint_max, self.strategy)
    self.stale = False  # Variables hold another state than training's.
    self._global_step_variable = None
    self._training = train.Training(self, settings.iterations_per_loop,
                                    loop.policy_for(settings))
    self._evaluation = evaluate.Evaluation(self)

  # -- the Runner of trainer/runtime/modes.py ---------------------------

  def global_step(self):
    variable = self._global_step_variable
    if variable is None:  # Looked up once it exists (a walk of the module).
      variable = self.module.variables_by_name().get('global_step')
      self._global_step_variable = variable
    if variable is not None and not self.stale:
      return int(tf_private.read_scalar(variable))
    return checkpoints.latest_checkpoint_step(self.settings.model_dir) or 0

  def train(self, to_step=None, *, steps=None, input_fn=None, hooks=(),
            saving_listeners=()):
    """Trains until global_step reaches `to_step` (or for `steps` more; with
    neither, until the input ends), as the loop policy says. The end of the
    input stops training early, with a checkpoint. `hooks`: SessionRunHooks
    of this call (a CheckpointSaverHook sets its checkpoint cadence);
    `saving_listeners`: CheckpointSaverListeners called around checkpoints.
    Returns the loss of the last step trained (None if none was).
    """
    if to_step is not None and steps is not None:
      raise ValueError('train: give at most one of to_step and steps.')
    if steps is not None:
      to_step = self.global_step() + steps
    return self._training.train(to_step, self._input_fn('train', input_fn),
                                hooks, saving_listeners)

  def evaluate(self, steps=None, *, input_fn=None, checkpoint_path=None,
               hooks=(), name=None):
    """{'loss', metrics..., 'global_step'} over `steps` batches (all the
    input when None) of `checkpoint_path` (default: the latest); written
    to model_dir/eval[_name] as Estimator does."""
    return self._evaluation.evaluate(
        steps, self._input_fn('eval', input_fn), checkpoint_path, hooks,
        name)

  def predict(self, *, input_fn=None, checkpoint_path=None, hooks=(),
              yield_single_examples=True, predict_keys=None):
    """Yields a dict of numpy values per example (or per batch)."""
    return self._evaluation.predict(
        self._input_fn('infer', input_fn), checkpoint_path, hooks,
        yield_single_examples, predict_keys)

  def export(self, export_dir, *, serving_input_receiver_fn=None,
             checkpoint_path=None):
    """SavedModel of the PREDICT graph under export_dir/TIMESTAMP; its path.

    serving_input_receiver_fn: as Estimator.export_saved_model takes it
    (TF1 placeholders included); default: the engine's serving_input_fn,
    else the built-in models' signature taking encoded images
    (trainer/models/inputs.py, input_fn/serving.py).
    """
    path = checkpoint_path or self.latest_checkpoint()
    if path is None:
      raise ValueError(f'--model_dir={self.settings.model_dir} has no '
                       'checkpoint to export.')
    serving_input_receiver_fn = (serving_input_receiver_fn or
                                 self._serving_input_fn)
    if serving_input_receiver_fn is None:
      serving_input_receiver_fn = inputs.serving_input_receiver_fn(
          self.model_params(estimator_compat.ModeKeys.PREDICT))
    return export.export_saved_model(
        self._model_fn,
        self.model_params(estimator_compat.ModeKeys.PREDICT, export=True),
        serving_input_receiver_fn, path, export_dir, self.config)

  # -- for verify_migration and tests ------------------------------------

  def train_steps(self, num_steps):
    """Runs `num_steps` steps in loops of <= iterations_per_loop, without
    checkpoints; their losses."""
    return self._training.steps(num_steps, self._input_fn('train', None))

  def variables(self):
    """{TF1 name: numpy value} of every checkpointed variable so far."""
    return {name: v.numpy()
            for name, v in self.module.variables_by_name().items()}

  def observe_training(self, steps, compared):
    """Trains `steps` steps one at a time; (each step's loss, after each
    step {TF1 name: value} of the variables `compared(name, variable)`
    selects)."""
    losses, weights, names = [], [], None
    for _ in range(steps):
      losses.append(float(self.train_steps(1)[0]))
      if names is None:
        names = {n for n, v in self.module.variables_by_name().items()
                 if compared(n, v)}
      values = self.variables()
      weights.append({n: values[n] for n in names})
    return losses, weights

  def save_checkpoint(self):
    """Writes model_dir/model.ckpt-STEP now; returns its prefix."""
    return self.checkpoints.save(self.global_step())

  # -- shared by train, evaluate and export -------------------------------

  def _input_fn(self, mode, input_fn):
    input_fn = input_fn or self._input_fns[mode]
    if input_fn is None:
      raise ValueError(f'No input_fn for mode {mode!r}.')
    return input_fn

  def _user_params(self):
    """The params dict of one model_fn / input_fn call: the settings' (a
    new dict), or a copy of the user's of the same type (a dict subclass,
    an AttrDict, stays one)."""
    if self._model_params is None:
      return self.settings.as_params()
    return copy.copy(self._model_params)

  def batch_size(self, mode):
    """The global batch of `mode`."""
    return (self.settings.train_batch_size
            if mode == estimator_compat.ModeKeys.TRAIN
            else self.settings.eval_batch_size)

  def model_params(self, mode, export=False):
    """params the model_fn sees: per-replica batch (None in export),
    use_tpu False."""
    params = self._user_params()
    if self._model_params is None:
      params['model_dir'] = self.model_dir
    params['batch_size'] = None if export else self._per_replica_batch[
        'train' if mode == estimator_compat.ModeKeys.TRAIN else 'eval']
    params['use_tpu'] = False
    return params

  def dataset(self, mode, input_fn):
    """The distributed dataset of `input_fn` for `mode`."""
    global_batch = self.batch_size(mode)
    host = strategy_lib.input_host_device(self.strategy)

    def dataset_fn(context):
      params = self._user_params()
      if self._model_params is None:
        params['mode'] = mode  # The trainer's input_fn contract.
      tpu_context = input_context.TPUInputContext(context, host)
      params['batch_size'] = context.get_per_replica_batch_size(global_batch)
      params['context'] = tpu_context
      with op_seeds.input_fn_op_seeds():  # The estimator runner's seeds.
        return input_tensors.input_dataset(
            lambda: estimator_calls.call_input_fn(
                input_fn, mode, copy.copy(params), self.config,
                tpu_context))

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  def call_model_fn(self, features, labels, mode, batch_size=None):
    """The model_fn's normalised spec on this engine's variables (call it
    in a trace): the one place the engine calls the model_fn (export.py
    traces its own copy with model_params(PREDICT, export=True)).
    The batch_size key is the per-replica batch, or `batch_size` when
    given (an evaluation of one device's whole batch)."""
    params = self.model_params(mode)
    if batch_size is not None:
      params['batch_size'] = batch_size
    return spec_lib.normalize(self.module(features, labels, mode, params),
                              mode)

  @contextlib.contextmanager
  def scope(self):
    """Strategy scope and the module's variable-creation scope."""
    with self.strategy.scope(), self.module.creation_scope():
      yield

  def latest_checkpoint(self):
    """model_dir's latest checkpoint prefix, or None."""
    return tf.train.latest_checkpoint(self.settings.model_dir)

  def load(self, spec, checkpoint_path=None):
    """After a trace: initialises the variables as TPUEstimator's session
    does, from `checkpoint_path` or model_dir's latest checkpoint through
    the spec's Scaffold, or, when there is none, with the trace's
    init_from_checkpoint values and the Scaffold's init_fn."""
    self.checkpoints.track_new_variables()
    with self.strategy.scope():
      scaffold = scaffold_lib.make(self.module, spec.scaffold_fn)
      scaffold_lib.load(scaffold, checkpoint_path or self.latest_checkpoint(),
                        self.checkpoints.restore, self.global_step,
                        self.module.checkpoint_inits.take())
    return scaffold
