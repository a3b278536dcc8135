"""The native runner: TF2-native models trained by Orbit.

NativeRunner implements the runner interface of trainer/controller.py
(global_step, train, evaluate, predict, export) for the Keras models of
model_fn/native, with the same input_fn (per input pipeline through
distribute_datasets_from_function, params['batch_size'] the per-replica
batch, params['mode'] train|eval|infer), the same learning-rate schedule and
optimizer math (model_fn/native/optimization.py), the same loss, metrics,
summary tags and predictions as the TF1 model_fn, under any strategy.

Checkpoints are object-based (tf.train.Checkpoint of model and optimizer,
MODEL_DIR/ckpt-STEP via tf.train.CheckpointManager); a model_dir holding the
TF1 runners' model.ckpt-N is refused with the command that converts it
(trainer/native/convert.py). train() saves every save_checkpoints_steps and
at its end; after each loop of <= iterations_per_loop steps it calls
on_loop_end(step, losses) before any save, so a caller can check the losses
(raise to stop without saving) or ask for a stop (return True: the runner
saves, then returns).
"""

import contextlib
import os
import sys
import time

from absl import logging
from model_fn.native import classifier
from model_fn.native import models
from model_fn.native import optimization
import orbit
import tensorflow as tf
from trainer.native import checkpoints
from trainer.native import training

TRAIN, EVAL, INFER = 'train', 'eval', 'infer'


class NativeCheckpointError(ValueError):
  """model_dir's checkpoint cannot be restored into the native model."""


def _default_input_fn(params):
  from input_fn import inputs  # pylint: disable=g-import-not-at-top
  name = params.get('input', 'tfrecord')
  if name not in inputs.INPUT_FNS:
    raise ValueError(f'--input={name!r}: pass input_fn= to NativeRunner for '
                     'an input_fn that is not built in.')
  return inputs.INPUT_FNS[name]


def _is_default_strategy(strategy):
  """True for the default (one-device) strategy, seen outside any scope."""
  return (not tf.distribute.has_strategy() and
          strategy is tf.distribute.get_strategy())


class NativeRunner:
  """train / evaluate / predict / export of the native model under Orbit.

  params: the trainer's params (model and optimizer keys, batch sizes,
  iterations_per_loop, save_checkpoints_steps, keep_checkpoint_max,
  model_dir, input, seed). strategy: a tf.distribute.Strategy (default: the
  default strategy). input_fn: input_fn(params) (default: the built-in
  params['input']). on_loop_end(step, losses): see the module docstring.
  jit_compile: XLA-compile the replica train step (default: params
  'jit_compile', on by default, and only under the default strategy).
  """

  def __init__(self, params, strategy=None, *, input_fn=None,
               on_loop_end=None, jit_compile=None):
    for key in ('iterations_per_loop', 'save_checkpoints_steps',
                'keep_checkpoint_max', 'train_batch_size', 'eval_batch_size'):
      if not isinstance(params.get(key), int) or params[key] < 1:
        raise ValueError(f"params['{key}'] ({params.get(key)}) must be a "
                         'positive integer.')
    if not params.get('model_dir'):
      raise ValueError("params['model_dir'] must be set.")
    if params.get('num_slices', 1) != 1:
      raise ValueError('--num_slices: the native models are not sliced; use '
                       '--num_slices=1 with the native runner.')
    if params.get('init_checkpoint'):
      raise ValueError('--init_checkpoint: the native runner starts from a '
                       'converted checkpoint in --model_dir instead (python '
                       '-m trainer.native.convert).')
    if on_loop_end is not None and not callable(on_loop_end):
      raise ValueError(f'`on_loop_end` ({on_loop_end!r}) must be callable.')
    self._params = params
    self.strategy = strategy or tf.distribute.get_strategy()
    self.num_replicas = self.strategy.num_replicas_in_sync
    for key in ('train_batch_size', 'eval_batch_size'):
      if params[key] % self.num_replicas:
        raise ValueError(f'--{key}={params[key]} must be divisible by the '
                         f'{self.num_replicas} replicas.')
    if jit_compile is None:
      jit_compile = params.get('jit_compile', True) and _is_default_strategy(
          self.strategy)
    self.jit_compile = bool(jit_compile)
    self._input_fn = input_fn or _default_input_fn(params)
    self._on_loop_end = on_loop_end
    self.model_dir = params['model_dir']
    tf.random.set_seed(params.get('seed', 0))
    with self.strategy.scope():
      self.model = models.build_model(params)
      self.optimizer = optimization.make_optimizer(params)
      self.optimizer.build(self.model.trainable_variables)
    self.checkpoint = checkpoints.make_checkpoint(self.model, self.optimizer)
    self.checkpoint_manager = checkpoints.make_manager(
        self.checkpoint, self.model_dir, params['keep_checkpoint_max'],
        step_counter=self.optimizer.iterations)
    self._restore()
    self._trainer = None
    self._evaluator = None
    self._controller = None
    self._summary_writer = None
    logging.info('native runner: %s, %d replica(s), jit_compile=%s, step %d.',
                 type(self.strategy).__name__, self.num_replicas,
                 self.jit_compile, self.global_step())

  # -- checkpoints ------------------------------------------------------------

  def _restore(self):
    latest = tf.train.latest_checkpoint(self.model_dir)
    if latest is None:
      return
    if not checkpoints.is_object_based(latest):
      raise NativeCheckpointError(
          f'--model_dir={self.model_dir} holds TF1 name-based checkpoints '
          f'({os.path.basename(latest)}); convert them for the native runner '
          f'into a new directory: python -m trainer.native.convert '
          f'--checkpoint={self.model_dir} --output=NEW_DIR (with the same '
          'model flags), then train with --model_dir=NEW_DIR.')
    with self.strategy.scope():
      try:
        self.checkpoint.restore(latest).assert_existing_objects_matched()
      except (AssertionError, ValueError) as e:
        raise NativeCheckpointError(
            f'{latest} does not match the native model of these flags: '
            f'{e}') from e
    logging.info('Restored %s (step %d).', latest, self.global_step())

  def save_checkpoint(self):
    """Writes MODEL_DIR/ckpt-STEP now; its path."""
    return self.checkpoint_manager.save(checkpoint_number=self.global_step())

  def global_step(self):
    return int(self.optimizer.iterations.numpy())

  # -- input ------------------------------------------------------------------

  def _dataset(self, mode):
    global_batch = self._params['train_batch_size' if mode == TRAIN
                                else 'eval_batch_size']

    def dataset_fn(context):
      return self._input_fn(dict(
          self._params, mode=mode, context=context,
          batch_size=context.get_per_replica_batch_size(global_batch)))

    return self.strategy.distribute_datasets_from_function(dataset_fn)

  # -- Orbit ------------------------------------------------------------------

  def _controller_for(self, *, trainer=False, evaluator=False):
    """The Controller, with the trainer / evaluator asked for made first
    (each input pipeline only when it is needed)."""
    if trainer and self._trainer is None:
      self._summary_writer = tf.summary.create_file_writer(
          self.model_dir, max_queue=self._params['iterations_per_loop'])
      self._trainer = training.NativeTrainer(
          self.model, self.optimizer, self._dataset(TRAIN), self._params,
          strategy=self.strategy,
          max_steps_per_loop=self._params['iterations_per_loop'],
          jit_compile=self.jit_compile, summary_writer=self._summary_writer)
      self._controller = None
    if evaluator and self._evaluator is None:
      self._evaluator = training.NativeEvaluator(
          self.model, self._dataset(EVAL), self._params,
          strategy=self.strategy, num_classes=self._params['num_classes'])
      self._controller = None
    if self._controller is None:
      self._controller = orbit.Controller(
          global_step=self.optimizer.iterations, trainer=self._trainer,
          evaluator=self._evaluator, strategy=self.strategy,
          steps_per_loop=(self._params['iterations_per_loop']
                          if self._trainer else None))
    return self._controller

  @contextlib.contextmanager
  def _orbit_output(self):
    """Orbit prints its log lines to stdout too: keep stdout for results."""
    with contextlib.redirect_stdout(sys.stderr):
      yield

  # -- training ---------------------------------------------------------------

  def train_loop(self, num_steps):
    """Runs `num_steps` (<= iterations_per_loop) steps; their losses."""
    controller = self._controller_for(trainer=True)
    with self._orbit_output():
      controller.train(self.global_step() + num_steps,
                       checkpoint_at_completion=False)
    return self._trainer.loop_losses()

  def train(self, to_step):
    """Trains until global_step reaches `to_step`, checkpointing as set."""
    step = self.global_step()
    every = self._params['save_checkpoints_steps']
    while step < to_step:
      next_save = (step // every + 1) * every
      n = min(self._params['iterations_per_loop'], to_step - step,
              next_save - step)
      losses = self.train_loop(n)
      step = self.global_step()
      stop = bool(self._on_loop_end(step, losses)) if self._on_loop_end else (
          False)
      if step % every == 0 or step >= to_step or stop:
        self.save_checkpoint()
      if stop:
        break

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
    controller = self._controller_for(evaluator=True)
    with self._orbit_output():
      output = controller.evaluate(-1 if steps is None else steps)
    result = {k: float(v) for k, v in output.items()
              if k in self._evaluator.metrics}
    result['global_step'] = self.global_step()
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
    from trainer import serving as export_lib  # pylint: disable=g-import-not-at-top
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

