"""Libraries built on Estimator's own modules (tests/facade/library.py), as
a user observes them: the real Estimator's results (golden, recorded on TF
2.15 and checked against it there) and the facade's, which must match:
metrics, predictions, checkpoint variables, and what each library relies
on (the wrapped model_fn's modes, the replaced check, the overridden
global_step)."""

import json
import math

import pytest

from tests.facade import library


def _close(expected, actual, path=''):
  """Problems where `actual` differs from `expected` (floats within 1e-5)."""
  if isinstance(expected, dict):
    if not isinstance(actual, dict) or sorted(expected) != sorted(actual):
      return [f'{path}: keys {sorted(expected)} on the reference, '
              f'{sorted(actual) if isinstance(actual, dict) else actual} here']
    return [p for k in expected
            for p in _close(expected[k], actual[k], f'{path}.{k}')]
  if isinstance(expected, list):
    if not isinstance(actual, list) or len(expected) != len(actual):
      return [f'{path}: {expected} on the reference, {actual} here']
    return [p for i, (e, a) in enumerate(zip(expected, actual))
            for p in _close(e, a, f'{path}[{i}]')]
  if isinstance(expected, float) and not isinstance(actual, bool):
    if not math.isclose(expected, actual, rel_tol=1e-5, abs_tol=1e-5):
      return [f'{path}: {expected} on the reference, {actual} here']
    return []
  return [] if expected == actual else [
      f'{path}: {expected!r} on the reference, {actual!r} here']


@pytest.mark.parametrize('case', library.CASES)
def test_library_results_are_the_real_estimators(case, tmp_path):
  with open(library.GOLDEN, encoding='utf-8') as f:
    expected = json.load(f)['results'][case]
  problems = _close(expected, library.run(case, str(tmp_path)))
  assert not problems, '\n'.join(problems)


def test_estimators_module_helper_a_canned_library_calls(tmp_path):
  """Issue 44's second failure: the libraries' canned models call
  tensorflow_estimator.python.estimator.estimator's
  maybe_overwrite_model_dir_and_session_config in their constructors; it
  behaves as the reference's on every lane."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator import estimator  # pylint: disable=g-import-not-at-top
  helper = estimator.maybe_overwrite_model_dir_and_session_config
  config = helper(None, str(tmp_path))
  assert isinstance(config, tf.compat.v1.estimator.RunConfig)
  assert config.model_dir == str(tmp_path)
  assert config.session_config.allow_soft_placement
  given = tf.compat.v1.estimator.RunConfig(model_dir=str(tmp_path / 'a'),
                                           tf_random_seed=5)
  assert helper(given, None).tf_random_seed == 5
  assert helper(given, str(tmp_path / 'a')).model_dir == str(tmp_path / 'a')
  with pytest.raises(ValueError, match='`model_dir` are set both in '
                     'constructor and `RunConfig`, but with different'):
    helper(given, str(tmp_path / 'b'))
  with pytest.raises(ValueError, match='config must be an instance of '
                     '`RunConfig`'):
    helper(object(), None)
  assert helper(tf.compat.v1.estimator.RunConfig(), None).model_dir
