"""The public Estimator APIs the facade does not provide, with what to use
instead, and the error it raises for them.

UnsupportedApiError names the API, why, and the alternative: stub(api)
makes a stand-in for a key of APIS (the single source of MIGRATION.md's
"not supported" list); gaps.py and stand_ins.py refuse the rest of
tensorflow_estimator's names the same way. REMOVED: names older
Estimators had that TF 2.15 has not either (an AttributeError saying so).
"""

import tensorflow as tf

from trainer.api import errors


class UnsupportedApiError(errors.TrainerError, NotImplementedError):
  """An Estimator API the trainer.legacy facade does not provide."""


# (API, why, alternative), by the name it has under tf.estimator or
# tf.compat.v1.estimator.
APIS = {
}


def error_for(api, why, alternative):
  """UnsupportedApiError for `api`, saying why and what to use instead."""
  return UnsupportedApiError(
      f'{api} is not supported by trainer.legacy on TensorFlow '
      f'{tf.__version__}: {why}. Instead: {alternative}.')


def error(api):
  """UnsupportedApiError for `api` (a key of APIS)."""
  return error_for(api, *APIS[api])


# Names older Estimators had that tensorflow_estimator 2.15 has in neither
# namespace (tf.estimator.BoostedTrees* is an AttributeError on TF 2.15):
# the facade's AttributeError says so, and what to use instead.
_BOOSTED_TREES = (
    'tensorflow_estimator 2.15 has no boosted-trees Estimators (they were '
    'removed before TF 2.15), so this is an AttributeError on TF 2.15 too; '
    'train a gradient-boosted trees model with TensorFlow Decision Forests '
    '(tfdf.keras.GradientBoostedTreesModel), or use DNNLinearCombined*')
REMOVED = {
    name: _BOOSTED_TREES for name in (
        'BoostedTreesClassifier', 'BoostedTreesEstimator',
        'BoostedTreesRegressor', 'boosted_trees_classifier_train_in_memory',
        'boosted_trees_regressor_train_in_memory')}


def stub(api):
  """A stand-in named like the API (a function for a lower-case name, else a
  class) whose call or construction raises error(api)."""
  name = api.rsplit('.', 1)[1]
  if name[:1].islower():

    def refuse(*args, **kwargs):
      del args, kwargs
      raise error(api)

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__module__ = 'trainer.facade.unsupported'
    refuse.__doc__ = f'Not supported: {APIS[api][1]}.'
    return refuse

  def __init__(self, *args, **kwargs):  # pylint: disable=invalid-name
    del self, args, kwargs
    raise error(api)

  return type(name, (), {'__init__': __init__, '__doc__':
                         f'Not supported: {APIS[api][1]}.',
                         '__module__': 'trainer.facade.unsupported'})
