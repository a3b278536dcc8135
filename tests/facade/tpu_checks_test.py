"""TPUEstimator(use_tpu=True)'s own checks through the facade, against TF
2.15's TPUEstimator (golden/tpu_checks.json, recorded by
`.venv/legacy/bin/python -m tests.facade.regenerate tpu_checks`).

Every case of tpu_checks.py runs in this process against a stand-in TPU
system (TPUEstimator._tpu_system answers the metadata query) with a
one-device strategy standing in for the TPUStrategy, so that the checks the
runner makes while tracing the model_fn run too: each raises the error TF
2.15 raised, in its order (a case with two mistakes reports the same one),
and the cases TF 2.15 let through run.
"""

import contextlib
import json
import os
from unittest import mock

import pytest
import tensorflow as tf

from tests import testutil
from tests.facade import regenerate
from tests.facade import tpu_checks

with open(os.path.join(regenerate.GOLDEN, 'tpu_checks.json')) as _f:
  GOLDEN = json.load(_f)

pytestmark = testutil.facade_lanes


@contextlib.contextmanager
def _stand_in(cores, hosts):
  # pylint: disable=g-import-not-at-top
  from trainer.facade.distributed import backend
  from trainer.facade.tpu import tpu_estimator
  from trainer.facade.tpu import validation
  # pylint: enable=g-import-not-at-top
  system = validation.TPUSystem.of(tpu_checks.metadata(cores, hosts))
  with mock.patch.object(tpu_estimator.TPUEstimator, '_tpu_system',
                         lambda self, mode: system), mock.patch.object(
                             backend.Backend, '_strategy',
                             lambda self, mode: (tf.distribute.get_strategy(),
                                                 'tpu')):
    yield


def test_golden_covers_every_case_and_some_pass():
  assert set(GOLDEN) == set(tpu_checks.CASES)
  assert GOLDEN['train_fine'] == [tpu_checks.FINE]
  assert GOLDEN['eval_on_cpu'] == [tpu_checks.FINE]
  assert sum(r != [tpu_checks.FINE] for r in GOLDEN.values()) >= 20


@pytest.mark.parametrize('case', sorted(tpu_checks.CASES))
def test_case_fails_as_tf215(case):
  assert tpu_checks.run_case(case, _stand_in) == GOLDEN[case]


def test_without_a_cluster_the_first_error_says_what_to_do(tmp_path):
  """No stand-in: the metadata query (TPUEstimator's first step in each
  call) finds no TPU to ask, and says how to run without one."""
  tpu = tf.compat.v1.estimator.tpu
  est = tpu.TPUEstimator(
      model_fn=tpu_checks._model_fn,  # pylint: disable=protected-access
      config=tpu.RunConfig(model_dir=str(tmp_path)), use_tpu=True,
      train_batch_size=8)
  with pytest.raises(ValueError, match='has no cluster .*use_tpu=False'):
    est.train(tpu_checks._input_fn, steps=2.5)  # pylint: disable=protected-access
