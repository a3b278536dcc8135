"""Steps/s of one model_fn under the estimator runner, the tf2 runner, Keras.

  python -m bench.runners                       # MLP 784-128-10, batch 128
  python -m bench.runners --input=synthetic     # no host input work

Runs, in one process, the same built-in model_fn under TPUEstimator
(use_tpu=False) and under the tf2 runner, and a Keras `model.fit` of the same
network (Dense 128 relu, Dense 10, Adam, jit_compile,
steps_per_execution = iterations_per_loop). Each is timed after a warm-up of
one loop (graph building and compilation excluded), over --steps steps, and
the ratios are printed with the goals: tf2 >= 1.5x estimator, >= 1.0x Keras;
the native runner (Keras model under Orbit) is timed too, goal >= 1.0x Keras.
The tf2 runner is also timed without XLA (tf2_nojit): for a model this small
the per-step launch of the compiled cluster costs more than XLA saves.
"""

import tempfile
import time

from absl import app
from absl import flags
import trainer  # pylint: disable=unused-import  (tf-keras before TF: trainer/__init__.py)
import tensorflow as tf  # pylint: disable=g-bad-import-order

import flags as trainer_flags
from trainer import controller
from trainer import params as params_lib
from trainer import registry
from trainer import runners
from trainer.compat import estimator as estimator_compat

FLAGS = flags.FLAGS


class _Clock(tf.compat.v1.train.SessionRunHook):
  """Times the Estimator's steps after the first `warmup` ones."""

  def __init__(self, warmup):
    self._warmup = warmup
    self._steps = 0
    self.start = self.stop = None
    self.timed_steps = 0

  def after_run(self, run_context, run_values):
    self._steps += 1
    if self._steps == self._warmup:
      self.start = time.perf_counter()
    elif self._steps > self._warmup:
      self.stop = time.perf_counter()
      self.timed_steps = self._steps - self._warmup


def _params(**overrides):
  params = params_lib.with_model_dir(
      params_lib.params_from_flags(FLAGS),
      tempfile.mkdtemp(prefix='bench-runners-'))
  params.update(mode='train', save_checkpoints_steps=10**9, **overrides)
  return params


def estimator_steps_per_sec(steps, model_fn, input_fn):
  """Steady-state steps/s of TPUEstimator.train (one train call)."""
  loop = FLAGS.iterations_per_loop
  params = _params(runner='estimator', train_steps=steps + loop)
  runner = runners.make_runner(params, model_fn, input_fn)
  clock = _Clock(warmup=loop)
  runner.estimator.train(controller.input_fn_for_mode(input_fn, 'train'),
                         max_steps=steps + loop, hooks=[clock])
  return clock.timed_steps / (clock.stop - clock.start)


def tf2_steps_per_sec(steps, model_fn, input_fn, jit_compile='on'):
  """Steps/s of Tf2Runner.train_steps after one warm-up loop."""
  loop = FLAGS.iterations_per_loop
  params = _params(runner='tf2', train_steps=steps + loop,
                   jit_compile=jit_compile)
  runner = runners.make_runner(params, model_fn, input_fn)
  runner.train_steps(loop)
  start = time.perf_counter()
  runner.train_steps(steps)
  return steps / (time.perf_counter() - start)


def native_steps_per_sec(steps, input_fn, jit_compile='on'):
  """Steps/s of the native runner (Keras model, Orbit) after a warm-up."""
  from trainer.native import runner as native_runner  # pylint: disable=g-import-not-at-top
  loop = FLAGS.iterations_per_loop
  params = _params(runner='native', train_steps=steps + loop,
                   jit_compile=jit_compile)
  runner = native_runner.NativeRunner(params, input_fn=input_fn)
  runner.train_steps(loop)
  start = time.perf_counter()
  runner.train_steps(steps)
  return steps / (time.perf_counter() - start)


def keras_steps_per_sec(steps, input_fn):
  """Steps/s of Keras model.fit on the same network and input."""
  loop = FLAGS.iterations_per_loop
  params = _params(runner='tf2')
  dataset = controller.input_fn_for_mode(input_fn, 'train')(
      dict(params, batch_size=params['train_batch_size']))
  dataset = dataset.map(lambda features, labels: (features['image'], labels))
  keras = tf.keras
  layers = [keras.layers.Flatten()]
  layers += [keras.layers.Dense(int(u), activation='relu')
             for u in params['mlp_hidden_units']]
  layers += [keras.layers.Dense(params['num_classes'])]
  model = keras.Sequential(layers)
  model.compile(
      optimizer=keras.optimizers.Adam(params['learning_rate']),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      jit_compile=True, steps_per_execution=loop)
  model.fit(dataset, epochs=1, steps_per_epoch=loop, verbose=0)
  start = time.perf_counter()
  model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
  return steps / (time.perf_counter() - start)


def main(argv):
  del argv
  steps = FLAGS.steps
  params = params_lib.params_from_flags(FLAGS)
  model_fn = registry.resolve_model_fn(params['model'])
  input_fn = registry.resolve_input_fn(params['input'])
  results = {}
  if estimator_compat.has_estimator():
    results['estimator'] = estimator_steps_per_sec(steps, model_fn, input_fn)
  results['tf2'] = tf2_steps_per_sec(steps, model_fn, input_fn)
  results['tf2_nojit'] = tf2_steps_per_sec(steps, model_fn, input_fn,
                                           jit_compile='off')
  results['keras_fit'] = keras_steps_per_sec(steps, input_fn)
  results['native'] = native_steps_per_sec(steps, input_fn)
  print(f'model {FLAGS.model}, batch {FLAGS.train_batch_size}, '
        f'iterations_per_loop {FLAGS.iterations_per_loop}, {steps} timed '
        f'steps, input {FLAGS.input}, TF {tf.__version__}')
  print(f'{"runner":<10} {"steps/s":>9} {"ms/step":>8}')
  for name, rate in results.items():
    print(f'{name:<10} {rate:9.1f} {1000.0 / rate:8.3f}')
  if 'estimator' in results:
    print(f'tf2 / estimator: {results["tf2"] / results["estimator"]:.2f}x '
          '(goal >= 1.5x)')
  print(f'tf2 / keras_fit: {results["tf2"] / results["keras_fit"]:.2f}x '
        '(goal >= 1.0x)')
  print(f'native / keras_fit: {results["native"] / results["keras_fit"]:.2f}x '
        '(goal >= 1.0x)')
  print('tf2_nojit: the tf2 runner without XLA (--jit_compile=off).')


if __name__ == '__main__':
  trainer_flags.define_flags()
  flags.DEFINE_integer('steps', 1000, 'Timed steps per runner.', lower_bound=1)
  FLAGS.set_default('augmentation', 'none')
  FLAGS.set_default('cache', True)
  FLAGS.set_default('num_cores', 1)
  app.run(main)
