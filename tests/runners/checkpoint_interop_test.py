"""Checkpoints both ways: train with one runner, continue with the other.

Both runners write TF1 name-based checkpoints with identical names. The
input pipeline restarts at every train() call on both runners, so
"50 steps, then 50 more" replays the same batches whichever runner does
the second half: the weights after 100 steps must agree.
"""

import numpy as np

from input_fn import inputs
from tests import testutil
from trainer.runners import registry as runners
from trainer.models import builtin

TOLERANCE = 1e-5


def _runner(kind, model_dir, **overrides):
  params = testutil.base_config(model_dir=str(model_dir), runner=kind,
                                train_steps=100, iterations_per_loop=25,
                                save_checkpoints_steps=50, **overrides)
  return runners.make_runner(params, builtin.model_fn('mlp'),
                             inputs.INPUT_FNS['tfrecord'])


def _assert_close(got, want, tolerance=TOLERANCE):
  assert got.keys() == want.keys()
  for name in want:
    np.testing.assert_allclose(got[name], want[name], rtol=0, atol=tolerance,
                               err_msg=name)


@testutil.requires_estimator
def test_estimator_to_tf2_and_back_to_estimator_reference(tmp_path):
  first = _runner('estimator', tmp_path / 'a')
  first.train(50)
  at_50 = testutil.checkpoint_values(tmp_path / 'a')
  assert at_50['global_step'] == 50

  tf2 = _runner('tf2', tmp_path / 'a')
  assert tf2.global_step() == 50
  tf2.train_steps(0)  # Builds and restores, trains nothing.
  _assert_close(tf2.variables(), at_50, tolerance=0)  # Slots, beta powers.
  tf2.train(100)
  assert tf2.global_step() == 100

  reference = _runner('estimator', tmp_path / 'b')
  reference.train(50)
  reference.train(100)
  _assert_close(testutil.checkpoint_values(tmp_path / 'a'),
                testutil.checkpoint_values(tmp_path / 'b'))


@testutil.requires_estimator
def test_tf2_to_estimator_and_estimator_evaluates_tf2_checkpoint(tmp_path):
  tf2 = _runner('tf2', tmp_path / 'a')
  tf2.train(50)
  tf2_metrics = tf2.evaluate(steps=3)

  estimator = _runner('estimator', tmp_path / 'a')
  est_metrics = estimator.evaluate(steps=3)
  assert est_metrics['global_step'] == 50
  assert abs(est_metrics['loss'] - tf2_metrics['loss']) < TOLERANCE
  assert abs(est_metrics['top_1_accuracy'] -
             tf2_metrics['top_1_accuracy']) < TOLERANCE
  estimator.train(100)
  assert testutil.checkpoint_values(tmp_path / 'a')['global_step'] == 100

  reference = _runner('tf2', tmp_path / 'b')
  reference.train(50)
  again = _runner('tf2', tmp_path / 'b')  # Restarts the input, as Estimator.
  again.train(100)
  _assert_close(testutil.checkpoint_values(tmp_path / 'a'),
                testutil.checkpoint_values(tmp_path / 'b'))
