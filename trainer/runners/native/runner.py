"""The native runner: TF2-native models trained by Orbit.

NativeRunner is a Runner of trainer/runtime/modes.py for the
Keras models of model_fn/native, with the same input_fn (per input pipeline
through distribute_datasets_from_function, params['batch_size'] the
per-replica batch, params['mode'] train|eval|infer, params['context'] the
InputContext), the same learning-rate schedule and optimizer math
(model_fn/native/optimization.py), the same loss, metrics, summary tags and
predictions as the TF1 model_fn, under the strategy the Config chooses
(trainer/runtime/strategy.py, as the tf2 runner; a non-chief worker keeps its
own copy under model_dir/worker-N).

Orbit runs the steps: a StandardTrainer / StandardEvaluator
(orbit_trainer.py), one StandardTrainer.train call per loop of <=
iterations_per_loop steps. The loop around those calls is the one every
runner shares, trainer/runtime/driver.py's, not Orbit's Controller: the
driver decides with the loop policy (trainer/runtime/loop.py) the progress
line, non-finite checks, checkpoint cadence and the SIGTERM stop, agreed by
every worker, as in the tf2 engine, where a Controller would run a second
outer loop inside it and print its own progress lines. Summaries: the
TF1 host_call's tags (train/loss, train/learning_rate at each step's global_step
before its update), Estimator's `loss` and `global_step/sec` (summaries.py) in
model_dir, and evaluation metrics in model_dir/eval.

Checkpoints are object-based (checkpoints.py, MODEL_DIR/ckpt-STEP); a model_dir
holding the TF1 runners' model.ckpt-N is refused with the command that converts
it (trainer/runners/native/convert.py). on_loop_end(step, losses), if given, is
called after each loop before any save: raise to stop without saving, or return
True to stop after a save.
"""

import os
import time

from absl import logging
from model_fn.native import classifier
from model_fn.native import optimization
import tensorflow as tf
from trainer import params as params_lib
from trainer.compat import op_seeds
from trainer.models import builtin
from trainer.guard import checkpoint_fit
from trainer.guard import nonfinite
from trainer.runners.native import summaries as native_summaries
from trainer.runners.native import orbit_trainer
from trainer.runtime import checkpoints
from trainer.runtime import driver
from trainer.runtime import eval_summaries
from trainer.runtime import loop
from trainer.runtime import strategy as strategy_lib
from trainer.runtime import tf_config

TRAIN, EVAL, INFER = 'train', 'eval', 'infer'
NativeCheckpointError = checkpoints.NativeCheckpointError


def _default_input_fn(config):
  from input_fn import inputs  # pylint: disable=g-import-not-at-top
  name = config.input
  if name not in inputs.INPUT_FNS:
    raise ValueError(f'--input={name!r}: pass input_fn= to NativeRunner for '
                     'an input_fn that is not built in.')
  return inputs.INPUT_FNS[name]


def _input_fns(input_fn, config):
  """{mode: input_fn} from None (the built-in), one callable or a dict."""
  if input_fn is None:
    input_fn = _default_input_fn(config)
  if callable(input_fn):
    return {mode: input_fn for mode in (TRAIN, EVAL, INFER)}
  missing = {TRAIN, EVAL, INFER} - set(input_fn)
  if missing:
    raise ValueError(f'input_fn has no entry for modes {sorted(missing)}.')
  return dict(input_fn)


class NativeRunner:
  """train / evaluate / predict / export of the native model under Orbit.

  config: the run's trainer.config.Config (model and optimizer settings,
  batch sizes, iterations_per_loop, save_checkpoints_steps,
  keep_checkpoint_max, model_dir, input, seed, jit_compile); the model
  code (model_fn/native) gets its params dict. strategy: a
  tf.distribute.Strategy (default: trainer/runtime/strategy.make_strategy).
  input_fn: input_fn(params) or {'train', 'eval', 'infer': input_fn}
  (default: the built-in config.input). on_loop_end(step, losses): see the
  module docstring. jit_compile: XLA-compile the replica train step
  (default: strategy.choose_jit of config.jit_compile, as the tf2 runner).
  """

  def __init__(self, config, strategy=None, *, input_fn=None,
               on_loop_end=None, jit_compile=None):
    if config.iterations_per_loop_secs:
      raise ValueError(
          f'--iterations_per_loop_secs={config.iterations_per_loop_secs}: the '
          'native runner runs loops of --iterations_per_loop steps (Orbit); '
          'give that instead, or use --runner=tf2.')
    for key in ('iterations_per_loop', 'save_checkpoints_steps',
                'keep_checkpoint_max', 'train_batch_size', 'eval_batch_size'):
      value = getattr(config, key)
      if not isinstance(value, int) or value < 1:
        raise ValueError(f"params['{key}'] ({value}) must be a "
                         'positive integer.')
    if not config.model_dir:
      raise ValueError("params['model_dir'] must be set.")
    params_lib.check_native(config)
    if on_loop_end is not None and not callable(on_loop_end):
      raise ValueError(f'`on_loop_end` ({on_loop_end!r}) must be callable.')
    self._config = config
    self._params = config.as_params()  # What the model code reads.
    if strategy is None:
      self.strategy, kind = strategy_lib.make_strategy(config.cluster)
    else:
      self.strategy, kind = (strategy,
                             strategy_lib.strategy_kind(strategy))
    self.num_replicas = self.strategy.num_replicas_in_sync
    strategy_lib.per_replica_batches(config, self.num_replicas,
                                     'native runner')
    if jit_compile is None:
      jit_compile = strategy_lib.choose_jit(kind, config.jit_compile)
    self.jit_compile = bool(jit_compile)
    self._input_fns = _input_fns(input_fn, config)
    self._on_loop_end = on_loop_end
    self.model_dir = config.model_dir
    if not tf_config.is_chief_task():  # Keeps its own copy, apart.
      self.model_dir = os.path.join(config.model_dir,
                                    f'worker-{tf_config.task_index()}')
    self._policy = loop.policy_for(config)
    self._summaries = native_summaries.TrainingSummaries(
        self.model_dir, config.save_summary_steps,
        config.log_step_count_steps)
    op_seeds.set_global_seed(config.seed)
    with self.strategy.scope():
      self.model = builtin.build_native_model(self._params)
      self.optimizer = optimization.make_optimizer(self._params)
      self.optimizer.build(self.model.trainable_variables)
    self.checkpoint = checkpoints.make_checkpoint(self.model, self.optimizer)
    self.checkpoint_manager = checkpoints.make_manager(
        self.checkpoint, self.model_dir, config.keep_checkpoint_max,
        step_counter=self.optimizer.iterations)
    self._restore()
    self._trainer = None
    self._evaluator = None
    self._summary_writer = None
    logging.info('native runner: %s, %d replica(s), jit_compile=%s, step %d.',
                 type(self.strategy).__name__, self.num_replicas,
                 self.jit_compile, self.global_step())

  # -- checkpoints ------------------------------------------------------------

  def latest_checkpoint(self):
    """model_dir's latest checkpoint prefix, None if there is none."""
    return tf.train.latest_checkpoint(self.model_dir)

  def _restore(self):
    latest = self.latest_checkpoint()
    if latest is None:
      return
    if not checkpoints.is_object_based(latest):
      raise NativeCheckpointError(
          f'--model_dir={self.model_dir} holds TF1 name-based checkpoints '
          f'({os.path.basename(latest)}); convert them for the native runner '
          f'into a new directory: python -m trainer.runners.native.convert '
          f'--checkpoint={self.model_dir} --output=NEW_DIR (with the same '
          'model flags), then train with --model_dir=NEW_DIR.')
    checkpoint_fit.check(checkpoints.object_variables(self.checkpoint),
                         latest)
    with self.strategy.scope():
      try:
        self.checkpoint.restore(latest).assert_existing_objects_matched()
      except (AssertionError, ValueError) as e:
        raise NativeCheckpointError(
            f'{latest} does not match the native model of these flags: '
            f'{e}') from e
    logging.info('Restored %s (step %d).', latest, self.global_step())

  def variables(self):
    """{name: numpy value} of the model's and the optimizer's variables."""
    values = {f'model/{v.name}': v.numpy() for v in self.model.variables}
    values.update({f'optimizer/{v.name}': v.numpy()
                   for v in self.optimizer.variables()})
    return values

  def save_checkpoint(self):
    """Writes MODEL_DIR/ckpt-STEP now; its path."""
    return self.checkpoint_manager.save(checkpoint_number=self.global_step())

  def global_step(self):
    return int(self.optimizer.iterations.numpy())

  # -- input ------------------------------------------------------------------

  def _dataset(self, mode):
    global_batch = (self._config.train_batch_size if mode == TRAIN
                    else self._config.eval_batch_size)
    input_fn = self._input_fns[mode]

    def dataset_fn(context):
      return input_fn(dict(
          self._params, mode=mode, context=context,
          batch_size=context.get_per_replica_batch_size(global_batch)))

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  # -- Orbit ------------------------------------------------------------------

  def _trainer_for(self):
    """The Orbit trainer, made (with its input pipeline) on first use."""
    if self._trainer is None:
      self._summary_writer = tf.summary.create_file_writer(
          self.model_dir, max_queue=self._config.iterations_per_loop)
      self._trainer = orbit_trainer.NativeTrainer(
          self.model, self.optimizer, self._dataset(TRAIN), self._params,
          strategy=self.strategy,
          max_steps_per_loop=self._config.iterations_per_loop,
          jit_compile=self.jit_compile, summary_writer=self._summary_writer)
    return self._trainer

  def _evaluator_for(self):
    """The Orbit evaluator, made (with its input pipeline) on first use."""
    if self._evaluator is None:
      self._evaluator = orbit_trainer.NativeEvaluator(
          self.model, self._dataset(EVAL), self._params,
          strategy=self.strategy, num_classes=self._config.num_classes)
    return self._evaluator

  # -- training ---------------------------------------------------------------

  def train_loop(self, num_steps):
    """Runs `num_steps` (<= iterations_per_loop) steps, no checkpoint; their
    losses."""
    trainer = self._trainer_for()
    trainer.train(tf.convert_to_tensor(num_steps, dtype=tf.int32))
    return trainer.loop_losses()

  def train_steps(self, num_steps):
    """Runs `num_steps` steps in loops of <= iterations_per_loop, without
    checkpoints, progress lines or checks; their losses."""
    losses = []
    while len(losses) < num_steps:
      n = min(self._config.iterations_per_loop, num_steps - len(losses))
      losses.extend(self.train_loop(n).tolist())
    return losses

  def observe_training(self, steps, compared):
    """Trains `steps` steps one at a time; (each step's loss, after each
    step {TF1 name: value} of the variables `compared(name, variable)`
    selects)."""
    variables = {n: v for n, v in self.model.tf1_variables().items()
                 if compared(n, v)}
    losses, weights = [], []
    for _ in range(steps):
      losses.append(float(self.train_steps(1)[0]))
      weights.append({n: v.numpy() for n, v in variables.items()})
    return losses, weights

  def train(self, to_step):
    """Trains until global_step reaches `to_step`, as the loop policy says
    (trainer/runtime/driver.py owns the loop): checkpoints at its cadence, at
    the end and on SIGTERM (then returns)."""
    driver.train(_NativeLoops(self, self._summaries, self._on_loop_end),
                 self._policy, to_step)

  # -- evaluation, prediction, export ------------------------------------------

  def _require_checkpoint(self, what):
    if self.checkpoint_manager.latest_checkpoint is None:
      raise ValueError(f'--model_dir={self.model_dir} has no checkpoint to '
                       f'{what}.')

  def evaluate(self, steps):
    """{'loss', 'top_1_accuracy', ['top_5_accuracy'], 'global_step'} over
    `steps` batches (None: the whole evaluation input)."""
    self._require_checkpoint('evaluate')
    if steps is not None and steps < 1:
      raise ValueError(f'`steps` ({steps}) must be positive or None.')
    evaluator = self._evaluator_for()
    output = evaluator.evaluate(
        tf.convert_to_tensor(-1 if steps is None else steps, dtype=tf.int32))
    result = {k: float(v) for k, v in output.items()
              if k in evaluator.metrics}
    step = self.global_step()
    eval_summaries.write_eval_summary(eval_summaries.eval_dir(self.model_dir),
                                      result, step, self.latest_checkpoint())
    result['global_step'] = step
    return result

  def predict(self):
    """Yields {'classes', 'probabilities'} per example, in input order."""
    self._require_checkpoint('predict with')
    strategy, model = self.strategy, self.model

    @tf.function
    def predict_step(element):
      features = element[0] if isinstance(element, (tuple, list)) else element

      def replica_fn(features):
        logits = model(classifier.images_of(features), training=False)
        return classifier.predictions(logits)

      outputs = strategy.run(replica_fn, args=(features,))
      return tf.nest.map_structure(lambda v: strategy.gather(v, axis=0),
                                   outputs)

    for element in self._dataset(INFER):
      arrays = {k: v.numpy() for k, v in predict_step(element).items()}
      for i in range(len(arrays['classes'])):
        yield {k: v[i] for k, v in arrays.items()}

  def export(self, export_dir):
    """SavedModel with serving_default(image_bytes) -> classes,
    probabilities under EXPORT_DIR/TIMESTAMP; its path."""
    self._require_checkpoint('export')
    from input_fn import serving as export_lib  # pylint: disable=g-import-not-at-top
    params = dict(self._params, batch_size=None)
    module = tf.Module()
    module.model = self.model

    @tf.function(input_signature=[tf.TensorSpec(
        [None], tf.string, name=export_lib.SERVING_INPUT_KEY)])
    def serve(image_bytes):
      images = export_lib.serving_images(image_bytes, params)
      return classifier.predictions(module.model(images, training=False))

    module.serve = serve
    target = os.path.join(export_dir, str(int(time.time())))
    tf.saved_model.save(module, target, signatures={'serving_default': serve})
    return target



class _NativeLoops(driver.LoopTrainer):
  """A NativeRunner's training, as the driver's LoopTrainer."""

  def __init__(self, runner, summaries, on_loop_end):
    self._runner = runner
    self._summaries = summaries
    self._on_loop_end = on_loop_end

  def global_step(self):
    return self._runner.global_step()

  def latest_checkpoint(self):
    return self._runner.latest_checkpoint()

  def begin(self):
    self._summaries.begin(self.global_step())

  def max_loop_steps(self):
    return None

  def train_loop(self, num_steps):
    runner = self._runner
    losses = runner.train_loop(num_steps)
    step = self.global_step()
    self._summaries.after_loop(step, losses)
    on_loop_end = self._on_loop_end
    stop = bool(on_loop_end is not None and on_loop_end(step, losses))
    return driver.LoopResult(losses=losses, stop=stop)

  def finite_variables(self):
    return nonfinite.finite_by_name(self._runner.variables())

  def save(self, step):
    del step  # The optimizer's step counter numbers the checkpoint.
    self._runner.save_checkpoint()
    return False

  def end(self):
    pass

  def any_worker(self, flag):
    return strategy_lib.any_worker(self._runner.strategy, flag)
