"""TPUConfig(iterations_per_loop='60s')'s estimator of steps per loop, as
TF 2.15's: the same counts for the same loop timings.

golden/iteration_count.json is what tensorflow_estimator 2.15's
IterationCountEstimator answered (the legacy lane checks it still does);
every lane checks that the estimator published at its module path answers
the same: the first loop of one step, the moves towards budget / step time,
the settling once loops take the budget, the buffer's capacity, ignored
timings and the reference's errors.
"""

import importlib
import json
import os
import random
import types

import pytest

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden',
                      'iteration_count.json')
MODULE = 'tensorflow_estimator.python.estimator.tpu.iteration_count_estimator'


def _counts(module):
  """Each get() over three budgets and capacities, loop timings noisy for
  ten loops then steady; two timings to ignore at the end."""
  rng = random.Random(3)
  counts = []
  for budget, capacity in ((2.0, 20), (0.5, 3), (60.0, 5)):
    estimator = module.IterationCountEstimator(capacity=capacity)
    steps = estimator.get(budget)
    counts.append(steps)
    for i in range(40):
      step_time = 0.01 + (0.05 if i < 10 else 0.001) * rng.random()
      estimator.update(step_time * steps, steps)
      steps = estimator.get(budget)
      counts.append(steps)
    estimator.update(0, 3)
    estimator.update(1, 0)
    counts.append(estimator.get(budget))
  return counts


@pytest.fixture(scope='module')
def module():
  # The real module on TF 2.15; on later TF the facade's, which
  # tests/conftest.py installed.
  return importlib.import_module(MODULE)


def test_counts_are_the_reference_estimators(module):
  with open(GOLDEN, encoding='utf-8') as f:
    golden = json.load(f)
  counts = _counts(module)
  assert counts == golden
  assert counts[0] == 1 and len(set(counts[34:42])) == 1, counts  # Settled.


def test_errors_are_the_reference_estimators(module):
  with pytest.raises(ValueError, match='`capacity` must be positive'):
    module.IterationCountEstimator(capacity=0)
  with pytest.raises(ValueError, match='`total_secs`. It must be positive'):
    module.IterationCountEstimator().get(0)
  counter = module.RuntimeCounter(runtime_secs=2.0, steps=4,
                                  step_time_secs=0.5)
  assert counter._fields == ('runtime_secs', 'steps', 'step_time_secs')


@pytest.mark.parametrize('given, secs, steps', [('90s', 90, 100),
                                                ('2m', 120, 100),
                                                (40, 0, 40)])
def test_a_tpu_estimators_duration_sizes_the_runners_loops(given, secs,
                                                           steps):
  """On a TPU the facade's runner gets TPUConfig's duration as
  iterations_per_loop_secs (loops sized by the loop policy with this
  estimator), and a count as iterations_per_loop: no longer refused."""
  from trainer.facade.distributed import backend  # pylint: disable=g-import-not-at-top
  config = types.SimpleNamespace(
      tf_random_seed=1, keep_checkpoint_max=5, save_checkpoints_steps=50,
      save_checkpoints_secs=None, save_summary_steps=100,
      log_step_count_steps=100,
      tpu_config=types.SimpleNamespace(iterations_per_loop=given))
  model = types.SimpleNamespace(
      config=config, is_tpu=True, train_batch_size=8, model_dir='/m',
      batch_size=lambda mode: 8)
  runner = backend.Backend.__new__(backend.Backend)
  runner.model = model
  settings = runner._settings('train', train_steps=10)  # pylint: disable=protected-access
  assert (settings.iterations_per_loop_secs,
          settings.iterations_per_loop) == (secs, steps)
