"""The generated model against the model_fn under the tf2 runner, number by
number, from the same checkpoint and the same batches.

Both sides get the very same batches (drawn once from the input_fns with
the tf2 runner's seeds) and the same random-op seeds (trainer/compat/
op_seeds.py, as the runners match Estimator's), on one device, without XLA.
Compared, in this order (training last: it changes the weights):
  * forward outputs: PREDICT predictions of one batch;
  * loss: EVAL loss of one batch;
  * gradients: what the model_fn hands its optimizer on one TRAIN batch;
  * evaluation metrics over --compare_eval_steps batches, 'loss' included;
  * served outputs: the SavedModel signatures (names, input and output
    keys, values), the tf2 runner's export against saved_model/;
  * --compare_steps training steps: each step's loss and, after each, the
    model's variables (weights, batch-norm statistics, the step).
Tolerances come from trainer/verify_migration.py: relative r = 8 k eps for
float32 (k steps; k = 1 for the one-shot comparisons), 2^-7 for bfloat16,
times the scale of the reference values; integers, booleans and strings
must be equal; moving statistics are judged as updates (weight_excess).
"""

import contextlib
import dataclasses
import functools
import os
import shutil
from typing import List, Optional

import numpy as np
import tensorflow as tf

from trainer import config as config_lib
from trainer import params as params_lib
from trainer import verify_migration
from trainer.compat import estimator_calls
from trainer.compat import op_seeds
from trainer.migrate import trace
from trainer.engines.tf2 import input_context
from trainer.engines.tf2 import input_tensors
from trainer.engines.tf2 import model_fn_adapter
from trainer.engines.tf2 import name_checkpoints
from trainer.engines.tf2 import engine as tf2_runner

TRAIN, EVAL, PREDICT = trace.TRAIN, trace.EVAL, trace.PREDICT


@dataclasses.dataclass
class Result:
  """One comparison: its largest difference, tolerance and verdict."""
  name: str
  max_abs_diff: Optional[float]
  tolerance: Optional[float]
  ok: bool
  detail: str = ''
  values: int = 0  # How many numbers were compared.


def _as_numpy(value):
  if isinstance(value, (tf.Tensor, tf.Variable)):
    value = value.numpy()
  return np.asarray(value)


def compare_values(name, reference, generated, relative, detail='',
                   floor=np.finfo(np.float32).tiny):
  """Result of {key: array} against {key: array}: same keys; exact for
  integers, booleans and strings; floats within relative * scale, the
  scale being max |reference| of the key, at least `floor`."""
  reference = {k: _as_numpy(v) for k, v in reference.items()}
  generated = {k: _as_numpy(v) for k, v in generated.items()}
  if set(reference) != set(generated):
    return Result(name, None, None, False,
                  f'keys differ: reference {sorted(reference)}, generated '
                  f'{sorted(generated)}')
  worst, tolerance, count, problems = 0.0, 0.0, 0, []
  for key in sorted(reference):
    a, b = reference[key], generated[key]
    count += a.size
    if a.shape != b.shape:
      problems.append(f'{key}: shape {a.shape} vs {b.shape}')
      continue
    if a.dtype.kind in 'fc':
      a64, b64 = a.astype(np.float64), b.astype(np.float64)
      diff = float(np.max(np.abs(a64 - b64))) if a.size else 0.0
      scale = float(np.max(np.abs(a64))) if a.size else 0.0
      bound = relative * max(scale, floor)
      if not np.isfinite(diff) and not np.array_equal(a64, b64,
                                                       equal_nan=True):
        problems.append(f'{key}: not finite')
      elif diff > bound:
        problems.append(f'{key}: {diff:.3g} > {bound:.3g}')
      worst, tolerance = max(worst, diff), max(tolerance, bound)
    elif not np.array_equal(a, b):
      problems.append(f'{key}: values differ ({a.dtype})')
      worst = float('inf')
  return Result(name, worst, tolerance, not problems,
                '; '.join(problems[:3]) or detail, count)


def _constant_input_fn(batches):
  """An input_fn whose dataset is exactly `batches` (features, labels)."""

  def input_fn(params):
    del params
    datasets = [tf.data.Dataset.from_tensors(b) for b in batches]
    return functools.reduce(lambda a, b: a.concatenate(b), datasets)

  return input_fn


def draw_batches(tracer, input_fns, mode, count):
  """`count` batches of the mode's input_fn as the tf2 runner reads it."""
  params = tracer.input_params(mode)
  params['context'] = input_context.TPUInputContext(
      tf.distribute.InputContext(1, 0, 1))
  with op_seeds.input_fn_op_seeds():
    dataset = input_tensors.input_dataset(
        lambda: estimator_calls.call_input_fn(
            input_fns[mode], mode, dict(params), None, params['context']))
    return [tf.nest.map_structure(tf.identity, b)
            for b in dataset.take(count)]


def _features_labels(element):
  return model_fn_adapter.features_labels(element)


class _SkippedApplies:
  """Within `skipping()`, every tf.compat.v1 optimizer's apply_gradients
  records its gradients and applies nothing (for the gradient probe)."""

  def __init__(self):
    self.grads_and_vars = []

  @contextlib.contextmanager
  def skipping(self):
    stack = contextlib.ExitStack()

    def make(original):
      del original

      def apply_gradients(optimizer, grads_and_vars, global_step=None,
                          name=None):
        del optimizer, global_step, name
        self.grads_and_vars.extend(
            (g, v) for g, v in grads_and_vars if g is not None)
        return tf.no_op()
      return apply_gradients

    with stack:
      for cls in trace._optimizer_classes():  # pylint: disable=protected-access
        stack.enter_context(trace._patched(cls, 'apply_gradients', make))  # pylint: disable=protected-access
      yield self


def _raw_receiver_fn(receiver, inputs):
  """The Estimator export of the features themselves (a dict, or the one
  tensor a model_fn takes as features, fed as 'input')."""
  export = tf.compat.v1.estimator.export
  if [r.key for r in receiver] == ['input'] and len(inputs) == 1:
    spec = receiver[0]

    def receiver_fn():
      placeholder = tf.compat.v1.placeholder(spec.dtype, spec.shape,
                                             name='input')
      return export.TensorServingInputReceiver(placeholder,
                                               {'input': placeholder})

    return receiver_fn
  return export.build_raw_serving_input_receiver_fn(
      {k: tf.constant(v) for k, v in inputs.items()})


def _dense(gradient):
  return tf.convert_to_tensor(gradient)


class Comparison:
  """Runs every comparison; `results` in order."""

  def __init__(self, params, model_fn, tracer, input_fns, facts, checkpoint,
               work_dir, steps, eval_steps, serving_input_fn=None):
    self._params = params_lib.replaced(
        params, iterations_per_loop=1, jit_compile='off',
        save_checkpoints_steps=10**9, save_checkpoints_secs=None,
        num_cpu_devices=1)
    self._model_fn = model_fn
    self._tracer = tracer
    self._input_fns = input_fns
    self._facts = facts
    self._checkpoint = checkpoint
    self._work = work_dir
    self._steps = steps
    self._eval_steps = eval_steps
    self._serving_input_fn = serving_input_fn
    self.results: List[Result] = []
    self.relative_once = verify_migration.relative_tolerance(
        facts.precision, 1)
    self.batches = {
        TRAIN: draw_batches(tracer, input_fns, TRAIN, steps),
        EVAL: draw_batches(tracer, input_fns, EVAL, eval_steps),
    }
    if PREDICT in facts.modes:
      self.batches[PREDICT] = draw_batches(tracer, input_fns, PREDICT, 1)
    else:
      self.batches[PREDICT] = []
    # Kernels that reduce in a thread-dependent order (e.g. depthwise
    # convolutions' gradients on CPU) would make both sides differ by
    # rounding from run to run; TensorFlow's switch makes them
    # deterministic (after the batches are drawn: unseeded random image
    # ops refuse to run under it).
    tf.config.experimental.enable_op_determinism()
    if len(self.batches[TRAIN]) < steps:
      raise ValueError(f'the training input gives only '
                       f'{len(self.batches[TRAIN])} batches; '
                       f'--compare_steps={steps} needs more.')

  # -- the reference: the model_fn under the tf2 runner -------------------

  def _model_dir(self, name):
    """A model_dir holding the checkpoint (its files copied)."""
    directory = os.path.join(self._work, name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for path in tf.io.gfile.glob(self._checkpoint + '.*'):
      shutil.copy(path, directory)
    base = os.path.basename(self._checkpoint)
    tf.compat.v1.train.update_checkpoint_state(directory, base,
                                     all_model_checkpoint_paths=[base])
    return directory

  def _runner(self, name, input_fns):
    params = params_lib.replaced(self._params, runner='tf2',
                                 model_dir=self._model_dir(name))
    return tf2_runner.Tf2Engine(config_lib.from_params(params),
                                self._model_fn, input_fns)

  # -- comparisons ----------------------------------------------------------

  def run(self, generated):
    """All comparisons of `generated` (a generated.Program)."""
    steps = [self.forward, self.loss, self.gradients, self.metrics,
             self.served, self.training]
    for step in steps:
      try:
        result = step(generated)
      except Exception as e:  # pylint: disable=broad-except
        result = [Result(step.__name__, None, None, False,
                         f'{type(e).__name__}: {e}')]
      self.results.extend(result if isinstance(result, list) else [result])
    return self.results

  def forward(self, generated):
    if PREDICT not in self._facts.modes:
      return self._neither('forward outputs', lambda: next(self._runner(
          'forward', {PREDICT: _constant_input_fn(self.batches[EVAL][:1])}
      ).predict(yield_single_examples=False)))
    batch = self.batches[PREDICT][0]
    runner = self._runner('forward', {PREDICT: _constant_input_fn([batch])})
    reference = next(runner.predict(yield_single_examples=False))
    features, _ = _features_labels(batch)
    outputs = generated.predict(features)
    if not isinstance(reference, dict):
      reference, outputs = {'predictions': reference}, {
          'predictions': outputs}
    return compare_values('forward outputs', reference, outputs,
                          self.relative_once, 'PREDICT predictions, 1 batch')

  def loss(self, generated):
    batch = self.batches[EVAL][0]
    runner = self._runner('loss', {EVAL: _constant_input_fn([batch])})
    reference = runner.evaluate(steps=1)
    results = generated.evaluate([batch])
    return compare_values('loss', {'loss': reference['loss']},
                          {'loss': results['loss']}, self.relative_once,
                          'EVAL loss, 1 batch')

  def gradients(self, generated):
    batch = self.batches[TRAIN][0]
    features, labels = _features_labels(batch)
    reference = self._reference_gradients(features, labels)
    ours = generated.gradients(features, labels, _SkippedApplies)
    return compare_values('gradients', reference, ours, self.relative_once,
                          'what the model_fn hands its optimizer, 1 batch')

  def _reference_gradients(self, features, labels):
    module = model_fn_adapter.ModelFnModule(self._model_fn)
    params = self._tracer.model_params(TRAIN)
    probe = _SkippedApplies()

    def fn(features, labels):
      probe.grads_and_vars.clear()
      with probe.skipping():
        module(features, labels, TRAIN, dict(params))
      return {v.name.split(':')[0]: _dense(g)
              for g, v in probe.grads_and_vars}

    function = tf.function(model_fn_adapter.plain(fn), autograph=False)
    op_seeds.set_global_seed(self._params['seed'])
    with module.creation_scope():
      function.get_concrete_function(features, labels)
    name_checkpoints.NameBasedCheckpoints(
        module.variables_by_name(), self._work, 1).restore(self._checkpoint)
    return function(features, labels)

  def metrics(self, generated):
    batches = self.batches[EVAL]
    runner = self._runner('metrics', {EVAL: _constant_input_fn(batches)})
    reference = dict(runner.evaluate(steps=len(batches)))
    reference.pop('global_step', None)
    ours = generated.evaluate(batches)
    return compare_values('evaluation metrics', reference, ours,
                          self.relative_once,
                          f'{len(batches)} EVAL batches')

  def served(self, generated):
    if not self._facts.signatures:
      return self._neither('served outputs', lambda: self._reference_export(
          {}))
    if generated.export_error:
      try:
        self._reference_export(generated.serving_examples(
            self.batches.get(PREDICT), self._facts.receiver_kind == 'raw'))
      except Exception as e:  # pylint: disable=broad-except
        return Result('served outputs', None, None, True,
                      'neither exports (the Estimator export fails too: '
                      f'{type(e).__name__})')
      return Result('served outputs', None, None, False,
                    f'the Estimator export works, saved_model/ failed: '
                    f'{generated.export_error}')
    inputs = generated.serving_examples(
        self.batches.get(PREDICT), self._facts.receiver_kind == 'raw')
    reference_dir = self._reference_export(inputs)
    reference = tf.saved_model.load(reference_dir)
    ours = tf.saved_model.load(generated.saved_model_dir)
    names = sorted(reference.signatures.keys())
    if names != sorted(ours.signatures.keys()):
      return Result('served outputs', None, None, False,
                    f'signatures differ: Estimator export {names}, '
                    f'saved_model {sorted(ours.signatures.keys())}')
    merged_reference, merged_ours = {}, {}
    for name in names:
      ref_fn, our_fn = reference.signatures[name], ours.signatures[name]
      ref_keys = sorted(ref_fn.structured_input_signature[1])
      our_keys = sorted(our_fn.structured_input_signature[1])
      if ref_keys != our_keys:
        return Result('served outputs', None, None, False,
                      f'signature {name}: input keys {ref_keys} (Estimator '
                      f'export) vs {our_keys}')
      feed = {k: tf.constant(inputs[k]) for k in ref_keys}
      for key, value in ref_fn(**feed).items():
        merged_reference[f'{name}/{key}'] = value
      for key, value in our_fn(**feed).items():
        merged_ours[f'{name}/{key}'] = value
    return compare_values('served outputs', merged_reference, merged_ours,
                          self.relative_once,
                          f'signatures {", ".join(names)}')

  def _neither(self, name, reference):
    """ok when the reference fails too: the model_fn does not build in
    PREDICT mode under Estimator either."""
    try:
      reference()
    except Exception as e:  # pylint: disable=broad-except
      return Result(name, None, None, True, 'neither side has it: no '
                    f'PREDICT mode (the tf2 runner fails too: '
                    f'{type(e).__name__})')
    return Result(name, None, None, False, 'the tf2 runner predicts, the '
                  'generated model has no PREDICT mode')

  def _reference_export(self, inputs):
    runner = self._runner('export', {})
    if self._serving_input_fn is not None:
      receiver_fn = self._serving_input_fn
    else:
      receiver_fn = _raw_receiver_fn(self._facts.receiver, inputs)
    return runner.export(os.path.join(self._work, 'export'),
                         serving_input_receiver_fn=receiver_fn,
                         checkpoint_path=self._checkpoint)

  def training(self, generated):
    batches = self.batches[TRAIN]
    runner = self._runner('train', {TRAIN: _constant_input_fn(batches)})
    names = {v.name for v in self._facts.model_variables}
    ref_losses, ref_weights = runner.observe_training(
        len(batches), lambda name, variable: name in names)
    initial = tf.train.load_checkpoint(self._checkpoint)
    our_losses, our_weights = generated.train(batches, names)
    k = len(batches)
    relative = verify_migration.relative_tolerance(self._facts.precision, k)
    loss_tolerance = verify_migration.loss_tolerance(self._facts.precision,
                                                     k, ref_losses)
    diffs = [abs(a - b) for a, b in zip(ref_losses, our_losses)]
    losses = Result('training losses', max(diffs), loss_tolerance,
                    max(diffs) <= loss_tolerance,
                    f'{k} steps: ' + ', '.join(
                        f'{a:.6g}/{b:.6g}' for a, b in
                        zip(ref_losses, our_losses)), k)
    state = sorted(n for n in names if verify_migration._is_state(n))  # pylint: disable=protected-access
    trainable = sorted(n for n in names if n not in state)
    # Weights of scale 1 or less are judged as if of scale 1: a variable
    # near 0 (an attention key's bias and its Adam slots) carries the
    # rounding of the larger terms of its updates, not its own scale's.
    weights = compare_values(
        'training weights', {n: ref_weights[-1][n] for n in trainable},
        {n: our_weights[-1][n] for n in trainable}, relative,
        f'after {k} steps, {len(trainable)} variables', floor=1.0)
    results = [losses, weights]
    if state:
      start = {n: initial.get_tensor(n) for n in state}
      excess, worst = 0.0, None
      for ref, ours in zip(ref_weights, our_weights):
        value, name = verify_migration.weight_excess(ref, ours, start, state)
        if value >= excess:
          excess, worst = value, name
      results.append(Result(
          'moving statistics', excess, 1.0, excess <= 1.0,
          f'apart by {excess:.3g} of half their movement (worst {worst})',
          len(state)))
    return results
