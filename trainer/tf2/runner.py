"""Runs an unmodified TPUEstimator model_fn / input_fn pair under tf.distribute.

`Tf2Runner` is the controller's Runner (trainer/controller.py), like
EstimatorRunner, with TF2 machinery. It owns what the parts share: the
strategy, the model_fn's variables (model_fn_adapter.ModelFnModule), input
and TF1 name-based checkpoints in model_dir (name_checkpoints.py), restored
into every variable as a trace creates it; scaffold_fn (--init_checkpoint)
applies when model_dir has none. The parts:
  * train.py: the model_fn's own train_op, iterations_per_loop steps per
    tf.function call, host_call on the host, following the loop policy
    (trainer/loop.py);
  * evaluate.py: evaluation, with the spec's metric_fn run on the host as
    TPUEstimator does (host_graph.py), and prediction;
  * export.py: the SavedModel of the PREDICT graph.
Input: input_fn(params) per input pipeline (distribute_datasets_from_function),
params['batch_size'] the per-replica batch, params['context'] the
tf.distribute.InputContext. The model_fn sees params['use_tpu'] = False: the
strategy, not CrossShardOptimizer, combines gradients across replicas.
"""

import contextlib
import os

from absl import logging
import tensorflow as tf

from trainer import controller
from trainer import loop
from trainer.compat import estimator as estimator_compat
from trainer.tf2 import evaluate
from trainer.tf2 import export
from trainer.tf2 import model_fn_adapter
from trainer.tf2 import name_checkpoints
from trainer.tf2 import strategy as strategy_lib
from trainer.tf2 import train

estimator_compat.install()  # Before model code looks the names up.
ModeKeys = estimator_compat.ModeKeys


class Tf2Runner:
  """train / evaluate / predict / export of a model_fn under one strategy."""

  def __init__(self, params, model_fn, input_fn):
    self._params = params
    self._model_fn = model_fn
    self._input_fn = input_fn
    tf.random.set_seed(params['seed'])
    self.strategy, self.strategy_kind = strategy_lib.make_strategy(params)
    self.jit = strategy_lib.supports_jit(self.strategy_kind) and params.get(
        'jit_compile', True)
    self.num_replicas = self.strategy.num_replicas_in_sync
    logging.info('tf2 runner: %s strategy, %d replica(s), jit_compile=%s.',
                 self.strategy_kind, self.num_replicas, self.jit)
    for key in ('train_batch_size', 'eval_batch_size'):
      if params[key] % self.num_replicas:
        raise ValueError(f'--{key}={params[key]} must be divisible by the '
                         f'{self.num_replicas} replicas of the tf2 runner.')
    self.model_dir = params['model_dir']
    if not strategy_lib.is_chief_task():  # Keeps its own copy, apart.
      self.model_dir = os.path.join(params['model_dir'],
                                    f'worker-{strategy_lib.task_index()}')
    with self.strategy.scope():
      self.module = model_fn_adapter.ModelFnModule(model_fn)
    self.checkpoints = name_checkpoints.ModuleCheckpoints(
        self.module, self.model_dir, params['model_dir'],
        params['keep_checkpoint_max'], self.strategy)
    self._scaffold_fn = None
    self._training = train.Training(self, params['iterations_per_loop'],
                                    loop.policy_for(params))
    self._evaluation = evaluate.Evaluation(self)

  # -- the controller's Runner ------------------------------------------

  def global_step(self):
    variable = self.module.variables_by_name().get('global_step')
    if variable is not None:
      return int(variable.numpy())
    return controller.latest_checkpoint_step(self._params['model_dir']) or 0

  def train(self, to_step):
    """Trains until global_step reaches `to_step`, as the loop policy says."""
    self._training.train(to_step)

  def evaluate(self, steps):
    """{'loss', metric names..., 'global_step'} over `steps` batches."""
    return self._evaluation.evaluate(steps)

  def predict(self):
    """Yields one dict of numpy values per example, in input order."""
    return self._evaluation.predict()

  def export(self, export_dir):
    """SavedModel of the PREDICT graph taking encoded images; its path."""
    return export.export_saved_model(
        self._model_fn, dict(self.model_params(ModeKeys.PREDICT),
                             batch_size=None),
        self.latest_checkpoint('export'), export_dir)

  # -- for verify_migration and tests ------------------------------------

  def train_steps(self, num_steps):
    """Runs `num_steps` steps in loops of <= iterations_per_loop, without
    checkpoints; their losses."""
    return self._training.steps(num_steps)

  def variables(self):
    """{TF1 name: numpy value} of every variable made so far."""
    return {name: v.numpy()
            for name, v in self.module.variables_by_name().items()}

  def save_checkpoint(self):
    """Writes model_dir/model.ckpt-STEP now; returns its prefix."""
    return self.checkpoints.save(self.global_step())

  # -- shared by train, evaluate and export -------------------------------

  def model_params(self, mode):
    """params the model_fn sees: per-replica batch, use_tpu False."""
    key = 'train_batch_size' if mode == ModeKeys.TRAIN else 'eval_batch_size'
    return dict(self._params,
                batch_size=self._params[key] // self.num_replicas,
                use_tpu=False, model_dir=self.model_dir)

  def dataset(self, mode):
    """The distributed dataset of input_fn for `mode`."""
    key = 'train_batch_size' if mode == ModeKeys.TRAIN else 'eval_batch_size'
    global_batch = self._params[key]

    input_fn = controller.input_fn_for_mode(self._input_fn, mode)

    def dataset_fn(context):
      return input_fn(dict(
          self._params, context=context,
          batch_size=context.get_per_replica_batch_size(global_batch)))

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  def call_model_fn(self, features, labels, mode):
    """The model_fn's spec on this runner's variables (call it in a trace)."""
    spec = self.module(features, labels, mode, self.model_params(mode))
    if spec.scaffold_fn is not None:
      self._scaffold_fn = spec.scaffold_fn
    return spec

  @contextlib.contextmanager
  def scope(self):
    """Strategy scope and the module's variable-creation scope."""
    with self.strategy.scope(), self.module.creation_scope():
      yield

  def latest_checkpoint(self, what):
    """model_dir's latest checkpoint; ValueError saying there is nothing to
    `what` (evaluate, predict, export) with if there is none."""
    path = tf.train.latest_checkpoint(self._params['model_dir'])
    if path is None:
      raise ValueError(f'--model_dir={self._params["model_dir"]} has no '
                       f'checkpoint to {what}.')
    return path

  def check_initialised(self, what):
    """After a trace: ValueError unless the variables get values from a
    checkpoint of model_dir or from the spec's scaffold_fn."""
    if not (self.checkpoints.built or self._scaffold_fn is not None):
      self.latest_checkpoint(what)

  def after_build(self):
    """Initialises the variables the latest trace created (checkpoint or
    scaffold_fn)."""
    self.checkpoints.after_trace(self._scaffold_fn)
