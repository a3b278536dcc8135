"""Steps/s of one model_fn under the estimator runner, the tf2 runner, Keras.

  python -m bench.runners                       # MLP 784-128-10, batch 128
  python -m bench.runners --input=synthetic     # no host input work
  python -m bench.runners --smoke               # seconds: that it runs (CI)
  python -m bench.runners --model=resnet --resnet_depth=18 --train_batch_size=32

Runs, in one process, the same built-in model_fn under TPUEstimator
(use_tpu=False) and under the tf2 runner (its own choice of XLA, and with
--jit_compile=on: tf2_xla), and a Keras `model.fit` of the same network
(Dense 128 relu, Dense 10, Adam, jit_compile,
steps_per_execution = iterations_per_loop; for --model=resnet the ResNet's
Keras twin, model_fn/native, with Adam). Each runner is built and warmed
up once (graph building and compilation excluded), then every runner runs
--steps steps in turn, for --rounds rounds, so that a machine shared with
other work slows all of them alike within a round. Each is timed from the
end of the first loop of each call to the end of the last (start and end of
the call left out: input_fn call, graph building, final checkpoint). Printed: each runner's
median steps/s and its range over the rounds, and the ratios
tf2 / estimator (goal >= 1.2x) and tf2 / keras_fit (goal >= 1.0x) as the
median of the per-round ratios, with their range. The native runner
(Keras model under Orbit, --runner=native) is timed the same way, goal
native / keras_fit >= 1.0x.
"""

import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup

if __name__ == '__main__':  # Before TensorFlow's first import.
  startup.prepare(sys.argv)

import statistics
import tempfile
import time

from absl import app
from absl import flags
import tensorflow as tf

import flags as trainer_flags
from trainer import params as params_lib
from trainer.api import estimator_names as estimator_compat
from trainer.facade import install as facade
from trainer.models import builtin
from trainer.models import registry
from trainer.runners import registry as runners
from trainer.runtime import modes

FLAGS = flags.FLAGS


class _Ticks:
  """The time from the `first`-th tick to the last (what comes before the
  first is warm-up: tracing, session start), and the rate of ticks in it."""

  def __init__(self, first):
    self._first = first
    self.reset()

  def reset(self):
    self._count = 0
    self._start = self._stop = None

  def tick(self):
    self._count += 1
    if self._count == self._first:
      self._start = time.perf_counter()
    elif self._count > self._first:
      self._stop = time.perf_counter()

  def elapsed(self):
    return self._stop - self._start

  def rate(self):
    return (self._count - self._first) / self.elapsed()


class _Clock(tf.compat.v1.train.SessionRunHook):
  """Steps/s of one Estimator.train call after its first `warmup` steps."""

  def __init__(self, warmup):
    self.ticks = _Ticks(first=warmup)

  def begin(self):  # Each train() call starts the count again.
    self.ticks.reset()

  def after_run(self, run_context, run_values):
    self.ticks.tick()

  def rate(self):
    return self.ticks.rate()


def _keras_clock(keras):
  """A clock callback of `keras` (tf-keras or Keras 3) for model.fit: the
  time from the end of the first execution (steps_per_execution steps: one
  batch callback) to the end of the last."""

  class KerasClock(keras.callbacks.Callback):

    def __init__(self):
      super().__init__()
      self.ticks = _Ticks(first=1)

    def on_train_begin(self, logs=None):
      self.ticks.reset()

    def on_train_batch_end(self, batch, logs=None):
      self.ticks.tick()

    def elapsed(self):
      return self.ticks.elapsed()

  return KerasClock()


def _config(root, **overrides):
  """The flags' Config for one runner, with a model_dir of its own in
  `root` (main's temporary directory, removed at the end)."""
  config = params_lib.with_model_dir(params_lib.config_from_flags(FLAGS),
                                     tempfile.mkdtemp(dir=root))
  return config.replace(mode='train', save_checkpoints_steps=10**9,
                        **overrides)


def estimator_bench(model_fn, input_fn, root):
  """run(steps) -> steps/s of one TPUEstimator.train call, its first loop
  (graph building) excluded."""
  loop = FLAGS.iterations_per_loop
  runner = runners.make_runner(_config(root, runner='estimator'), model_fn,
                               input_fn)
  train_input = modes.input_fn_for_mode(input_fn, 'train')

  clock = _Clock(warmup=loop)

  def run(steps):
    runner.estimator.train(train_input, steps=steps + loop, hooks=[clock])
    return clock.rate()

  return run


def tf2_bench(model_fn, input_fn, jit_compile, root):
  """run(steps) -> steps/s of one Tf2Engine.train call after its first loop,
  as _Clock times the estimator. The clock wraps the runner's loop (a user
  hook would make the runner run one step a loop, as Estimator runs hooks
  after every step): from the end of the first loop to the end of the last,
  hooks, host_call and the policy's per-loop work included."""
  loop = FLAGS.iterations_per_loop
  params = _config(root, runner='tf2', jit_compile=jit_compile)
  runner = runners.make_runner(params, model_fn, input_fn)
  training = runner._training  # pylint: disable=protected-access
  run_loop = training._run_loop  # pylint: disable=protected-access
  ends = []

  def timed_loop(num_steps):
    result = run_loop(num_steps)
    ends.append(time.perf_counter())
    return result

  training._run_loop = timed_loop  # pylint: disable=protected-access
  runner.train(steps=loop)  # Traces and compiles.

  def run(steps):
    ends.clear()
    runner.train(steps=steps + loop)
    return steps / (ends[-1] - ends[0])

  return run


def native_bench(input_fn, root):
  """run(steps) -> steps/s of the native runner (Keras model under Orbit),
  built and warmed up once (one loop)."""
  loop = FLAGS.iterations_per_loop
  params = _config(root, runner='native', jit_compile='on',
                   train_steps=loop + FLAGS.rounds * FLAGS.steps)
  # The native runner trains the built-in model's Keras twin: no model_fn.
  runner = runners.make_runner(params, None, input_fn)
  runner.train_steps(loop)

  def run(steps):
    start = time.perf_counter()
    runner.train_steps(steps)
    return steps / (time.perf_counter() - start)

  return run


def keras_3():
  """The Keras 3 package where it is installed beside tf.keras (TF >= 2.16:
  tf.keras is tf-keras here, trainer/__init__.py), else None."""
  try:
    import keras  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  return keras if int(keras.__version__.split('.')[0]) >= 3 else None


def keras_bench(input_fn, root, keras=None):
  """run(steps) -> steps/s of one Keras model.fit call on the same network
  and input, its first execution excluded; `keras`: tf.keras by default."""
  loop = FLAGS.iterations_per_loop
  params = _config(root, runner='tf2').as_params()
  dataset = modes.input_fn_for_mode(input_fn, 'train')(
      dict(params, batch_size=params['train_batch_size']))
  dataset = dataset.map(lambda features, labels: (features['image'], labels))
  keras = keras or tf.keras
  if params['model'] == 'mlp':
    layers = [keras.layers.Flatten()]
    layers += [keras.layers.Dense(int(u), activation='relu')
               for u in params['mlp_hidden_units']]
    layers += [keras.layers.Dense(params['num_classes'])]
    model = keras.Sequential(layers)
  else:  # The built-in model's Keras twin (ResNet: model_fn/native).
    model = builtin.build_native_model(params)
  model.compile(
      optimizer=keras.optimizers.Adam(params['learning_rate']),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      jit_compile=True, steps_per_execution=loop)
  clock = _keras_clock(keras)
  model.fit(dataset, epochs=1, steps_per_epoch=loop, verbose=0)

  def run(steps):
    model.fit(dataset, epochs=1, steps_per_epoch=steps + loop, verbose=0,
              callbacks=[clock])
    return steps / clock.elapsed()

  return run


def _median_range(values):
  values = sorted(values)
  return statistics.median(values), values[0], values[-1]


def _ratio_line(rates, name, of, goal):
  ratios = [a / b for a, b in zip(rates[name], rates[of])]
  median, low, high = _median_range(ratios)
  return (f'{name} / {of}: {median:.2f}x (rounds {low:.2f}-{high:.2f}, '
          f'goal >= {goal}x)')


def _measure(model_fn, input_fn, root):
  """{runner: [steps/s per round]}, the runners' model_dirs in `root`."""
  benches = {}
  if estimator_compat.has_estimator():
    benches['estimator'] = estimator_bench(model_fn, input_fn, root)
  benches['tf2'] = tf2_bench(model_fn, input_fn, 'auto', root)
  benches['tf2_xla'] = tf2_bench(model_fn, input_fn, 'on', root)
  benches['keras_fit'] = keras_bench(input_fn, root)
  if keras_3() is not None and FLAGS.model == 'mlp':  # TF 2.20's tf.keras
    # without tf-keras (the built-in models' Keras twins are tf-keras).
    benches['keras3_fit'] = keras_bench(input_fn, root, keras_3())
  benches['native'] = native_bench(input_fn, root)
  rates = {name: [] for name in benches}
  for _ in range(FLAGS.rounds):
    for name, run in benches.items():
      rates[name].append(run(FLAGS.steps))
  return rates


def main(argv):
  del argv
  if FLAGS.smoke:  # A few steps of every runner: that the benchmark runs.
    for name, value in (('steps', 20), ('rounds', 1)):
      if not FLAGS[name].present:
        FLAGS[name].value = value
  params = params_lib.params_from_flags(FLAGS)
  model_fn = registry.resolve_model_fn(params['model'])
  input_fn = registry.resolve_input_fn(params['input'])
  with tempfile.TemporaryDirectory(prefix='bench-runners-') as root:
    rates = _measure(model_fn, input_fn, root)
  print(f'model {FLAGS.model}, batch {FLAGS.train_batch_size}, '
        f'iterations_per_loop {FLAGS.iterations_per_loop}, {FLAGS.steps} '
        f'timed steps x {FLAGS.rounds} rounds, input {FLAGS.input}, '
        f'TF {tf.__version__}')
  print(f'{"runner":<10} {"steps/s":>9} {"ms/step":>8}  range over rounds')
  for name, values in rates.items():
    median, low, high = _median_range(values)
    print(f'{name:<10} {median:9.1f} {1000.0 / median:8.3f}  '
          f'{low:.1f}-{high:.1f}')
  if 'estimator' in rates:
    print(_ratio_line(rates, 'tf2', 'estimator', 1.2))
  print(_ratio_line(rates, 'tf2', 'keras_fit', 1.0))
  print(_ratio_line(rates, 'native', 'keras_fit', 1.0))
  if 'keras3_fit' in rates:
    print(_ratio_line(rates, 'tf2', 'keras3_fit', 1.0))
  print('tf2: the tf2 runner as --jit_compile=auto chooses; tf2_xla: with '
        '--jit_compile=on. keras_fit: tf.keras (tf-keras on TF >= 2.16); '
        'keras3_fit: the Keras 3 package.')


if __name__ == '__main__':
  facade.install()  # Before model modules name tf.estimator (TF >= 2.16).
  trainer_flags.define_flags()
  runners.add_flag_validator()
  flags.DEFINE_integer('steps', 1000, 'Timed steps per runner and round.',
                       lower_bound=1)
  flags.DEFINE_integer('rounds', 5, 'Rounds over all runners.', lower_bound=1)
  flags.DEFINE_bool('smoke', False, '20 steps, one round: checks that the '
                    'benchmark runs, measures nothing.')
  FLAGS.set_default('augmentation', 'none')
  FLAGS.set_default('cache', True)
  FLAGS.set_default('num_cores', 1)
  app.run(main)
