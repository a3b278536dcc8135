"""The generated program, imported into this process to convert its
checkpoint, export it and compare it: its own model.py and train.py run
(Trainer.build, export), on the default strategy."""

import contextlib
import functools
import importlib
import os
import sys

import numpy as np
import tensorflow as tf

from trainer.compat import op_seeds


def load_package(out_dir):
  """Imports OUT as a package (fresh: earlier imports of it are dropped);
  {module: object} of model, config, tf1_bridge, train."""
  parent, name = os.path.split(os.path.abspath(out_dir))
  for module in [m for m in sys.modules if m == name or
                 m.startswith(name + '.')]:
    del sys.modules[module]
  if parent not in sys.path:
    sys.path.insert(0, parent)
  importlib.invalidate_caches()
  return {part: importlib.import_module(f'{name}.{part}')
          for part in ('config', 'tf1_bridge', 'model', 'train')}


def _features_labels(element):
  if isinstance(element, (tuple, list)) and len(element) == 2:
    return element[0], element[1]
  return element, None


class Program:
  """The generated model, built, on the default strategy."""

  def __init__(self, out_dir, seed, work_dir):
    self.out_dir = out_dir
    self.modules = load_package(out_dir)
    self._seed = seed
    self.strategy = tf.distribute.get_strategy()
    op_seeds.set_global_seed(seed)
    config = self.modules['config']
    self.model = self.modules['model'].Model(
        dict(config.PARAMS, model_dir=work_dir))
    trainer = self.modules['train'].Trainer(self.strategy, self.model,
                                            work_dir)
    with op_seeds.derived_op_seeds():
      trainer.build()
    self._host_dtypes = trainer.host_dtypes
    self._work_dir = work_dir
    self._functions = {}
    self.export_error = None
    self.saved_model_dir = os.path.join(out_dir, 'saved_model')

  def _function(self, name, fn):
    """A tf.function of fn, first traced with the runners' random-op seeds
    (the same numbers as the model_fn under the tf2 runner draws)."""
    if name not in self._functions:
      function = tf.function(fn, autograph=False)

      def call(*args):
        if not getattr(call, 'traced', False):
          op_seeds.set_global_seed(self._seed)
          with op_seeds.derived_op_seeds():
            result = function(*args)
          call.traced = True
          return result
        return function(*args)

      self._functions[name] = call
    return self._functions[name]

  def export(self):
    return self.export_to(self.out_dir)

  def export_to(self, directory):
    """train.py's export into directory/saved_model."""
    self.saved_model_dir = self.modules['train'].export(self.model,
                                                        directory)
    return self.saved_model_dir

  def predict(self, features):
    outputs = self._function('predict', self.model.call)(features)
    return tf.nest.map_structure(lambda t: t.numpy(), outputs)

  def evaluate(self, batches):
    step = self._function('evaluate', self.model.evaluate_step)
    self.model.reset_evaluation()
    with self.model.evaluation_weights():
      for batch in batches:
        step(*_features_labels(batch))
      return {k: v.numpy() for k, v in
              self.model.evaluation_results().items()}

  @contextlib.contextmanager
  def unchanged(self):
    """The model's variables as they were before the block (a TRAIN call
    updates batch-norm statistics even when nothing is applied)."""
    variables = list(self.model.variables_by_name().values())
    values = [v.read_value() for v in variables]
    try:
      yield
    finally:
      for variable, value in zip(variables, values):
        variable.assign(value)

  def gradients(self, features, labels, skipped_applies):
    """{TF1 variable name: gradient} of one TRAIN batch, nothing applied."""
    bridge = self.modules['tf1_bridge']
    probe = skipped_applies()

    def fn(features, labels):
      recorder = bridge.Recorder()
      probe.grads_and_vars.clear()
      with probe.skipping():
        self.model.tf1(features, labels, bridge.TRAIN,
                       self.model.mode_params(bridge.TRAIN),
                       recorder=recorder)
      pairs = list(recorder.grads_and_vars or []) + probe.grads_and_vars
      names = {id(v): n for n, v in self.model.variables_by_name().items()}
      return {names.get(id(v), v.name.split(':')[0]): tf.convert_to_tensor(g)
              for g, v in pairs}

    # Not cached: the probe's patches must be in place while it traces.
    function = tf.function(fn, autograph=False)
    op_seeds.set_global_seed(self._seed)
    with op_seeds.derived_op_seeds(), self.unchanged():
      return {k: v.numpy() for k, v in function(features, labels).items()}

  def train(self, batches, names):
    """Trains one step per batch with train.py's own loop (its Trainer,
    fed these batches); (losses, after each step {name: value} of the
    variables `names`)."""
    # train.py's Trainer on these batches (not on its input_fn's).
    cls = self.modules['train'].Trainer
    trainer = cls.__new__(cls)
    trainer.strategy, trainer.model = self.strategy, self.model
    trainer.loop = tf.function(trainer._loop, autograph=False)  # pylint: disable=protected-access
    trainer.host_dtypes = self._host_dtypes
    dataset = functools.reduce(
        lambda a, b: a.concatenate(b),
        [tf.data.Dataset.from_tensors(b) for b in batches])
    trainer.iterator = iter(self.strategy.distribute_datasets_from_function(
        lambda context: dataset))
    losses, weights = [], []
    for index in range(len(batches)):
      if index == 0:
        op_seeds.set_global_seed(self._seed)
        with op_seeds.derived_op_seeds():
          step_losses, _ = trainer.run(1)
      else:
        step_losses, _ = trainer.run(1)
      losses.append(float(step_losses[-1]))
      values = self.model.variables_by_name()
      weights.append({n: values[n].numpy() for n in names if n in values})
    return losses, weights

  def serving_examples(self, predict_batches, raw):
    """{input key: numpy batch} to feed both exports' signatures: the
    PREDICT batch's features when the signature takes the features (`raw`),
    else values made for the receiver's placeholders."""
    inputs = {}
    for function in self.model.serving_signatures().values():
      for spec in function.input_signature:
        inputs[spec.name] = spec
    features = None
    if predict_batches and raw:
      features, _ = _features_labels(predict_batches[0])
    examples = {}
    for key, spec in inputs.items():
      if isinstance(features, dict) and key in features:
        examples[key] = features[key].numpy()
      elif features is not None and not isinstance(features, dict) and (
          spec.dtype == features.dtype):
        examples[key] = features.numpy()
      else:
        examples[key] = _synthetic(spec)
    return examples


def _synthetic(spec, batch=2):
  """Example inputs for a serving signature: JPEG bytes for strings (image
  serving functions decode them), seeded values otherwise."""
  rng = np.random.RandomState(0)
  shape = [batch if d is None else d for d in (spec.shape.as_list() or [])]
  if spec.dtype == tf.string:
    images = [tf.io.encode_jpeg(rng.randint(0, 255, (32, 32, 3)).astype(
        np.uint8)).numpy() for _ in range(int(np.prod(shape) or 1))]
    return np.array(images, dtype=object).reshape(shape)
  if spec.dtype.is_integer:
    return rng.randint(0, 2, shape).astype(spec.dtype.as_numpy_dtype)
  if spec.dtype.is_bool:
    return rng.randint(0, 2, shape).astype(bool)
  return rng.uniform(-1, 1, shape).astype(spec.dtype.as_numpy_dtype)
