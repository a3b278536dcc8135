"""The calls Estimator and TPUEstimator make into their overridable
methods, as a library's subclass sees them: the real Estimator's
(golden/subclass_calls.json, recorded on TF 2.15 and checked against it
there) and the facade's, which must be the same calls in the same order
with the same arguments (tests/facade/subclass_contract.py)."""

import json

import pytest
import tensorflow as tf

from tests import testutil
from tests.facade import subclass_contract


def _golden():
  with open(subclass_contract.GOLDEN, encoding='utf-8') as f:
    return json.load(f)


def _diff(expected, actual):
  """The first differing call, readably."""
  for i, (e, a) in enumerate(zip(expected, actual)):
    if e != a:
      return f'call {i}: the reference makes {e}, here {a}'
  return (f'{len(expected)} calls on the reference, {len(actual)} here; '
          f'from the first extra: {(expected + actual)[min(len(expected), len(actual)):][:3]}')


@pytest.mark.parametrize('kind', subclass_contract.KINDS)
def test_overridable_methods_are_called_as_by_the_real_estimator(
    kind, tmp_path):
  """On TF 2.15: the golden is what the real Estimator calls (regenerate
  with python -m tests.facade.subclass_contract). On the facade's lanes:
  the facade calls the same."""
  expected = _golden()['calls'][kind]
  actual = subclass_contract.record(kind, str(tmp_path))
  assert actual == expected, _diff(expected, actual)


@pytest.mark.parametrize('api', ['tf.estimator', 'tf.compat.v1.estimator'])
def test_a_replaced_override_check_gets_the_instance(api):
  """Issue 44's third failure: Estimator calls the check as
  `self.__class__._assert_members_are_not_overridden(self)`, so a subclass
  that replaces it with a staticmethod (and overrides a member it would
  refuse) gets the instance."""
  module = tf.estimator if api == 'tf.estimator' else tf.compat.v1.estimator
  seen = []

  class Library(module.Estimator):

    @staticmethod
    def _assert_members_are_not_overridden(estimator):
      seen.append(estimator)

    def _call_model_fn(self, features, labels, mode, config):
      return super()._call_model_fn(features, labels, mode, config)

  estimator = Library(model_fn=lambda features, labels, mode: None)
  assert seen == [estimator]


def test_the_override_check_still_refuses_an_override():
  class Overriding(tf.compat.v1.estimator.Estimator):

    def _call_model_fn(self, features, labels, mode, config):
      del features, labels, mode, config

  with pytest.raises(ValueError, match=r"cannot override members of "
                     r"Estimator.*\['_call_model_fn'\]"):
    Overriding(model_fn=lambda features, labels, mode: None)


@testutil.facade_lanes
def test_an_override_the_tf2_runner_would_bypass_is_refused_before_training(
    tmp_path):
  """On a TPU the facade trains on its tf2 runner, which calls the model_fn
  itself: a subclass's _call_model_fn would not run, so train() refuses
  before anything runs, naming it."""
  from trainer.facade import unsupported  # pylint: disable=g-import-not-at-top
  tpu = tf.compat.v1.estimator.tpu
  calls = []

  class Library(tpu.TPUEstimator):

    @staticmethod
    def _assert_members_are_not_overridden(estimator):
      del estimator  # Replaced, as such libraries do.

    def _call_model_fn(self, features, labels, mode, config):
      calls.append(mode)
      return super()._call_model_fn(features, labels, mode, config)

  estimator = Library(
      model_fn=subclass_contract.tpu_model_fn, use_tpu=True,
      train_batch_size=2, config=tpu.RunConfig(model_dir=str(tmp_path)))
  with pytest.raises(unsupported.UnsupportedApiError,
                     match=r'Library\._call_model_fn.*on a TPU.*Instead: '
                     'move that logic into the model_fn'):
    estimator.train(subclass_contract.train_input_fn, steps=1)
  assert not calls and not list(tmp_path.iterdir())
