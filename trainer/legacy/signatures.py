"""Calls model_fn and input_fn with the arguments their signatures name.

Estimator accepts model_fn(features[, labels][, mode][, params][, config])
and input_fn([mode][, params][, config][, input_context]); TPUEstimator
requires input_fn to take params (for params['batch_size']).
"""

import inspect

_MODEL_FN_ARGS = {'features', 'labels', 'mode', 'params', 'config', 'self'}


def fn_args(fn):
  """Names of the parameters `fn` takes by name (partials: the unbound ones)."""
  try:
    parameters = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError) as e:
    raise TypeError(f'{fn!r} is not a function with a signature: {e}') from e
  return tuple(p.name for p in parameters
               if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def verify_model_fn_args(model_fn, params):
  """Raises ValueError as Estimator does for a model_fn it cannot call."""
  args = set(fn_args(model_fn))
  if 'features' not in args:
    raise ValueError(f'model_fn ({model_fn}) must include features argument.')
  if params is not None and 'params' not in args:
    raise ValueError(f'model_fn ({model_fn}) does not include params '
                     f'argument, but params ({params}) is passed to '
                     'Estimator.')
  unexpected = sorted(args - _MODEL_FN_ARGS)
  if unexpected:
    raise ValueError(f'model_fn ({model_fn}) has following not expected '
                     f'args: {unexpected}')


def call_model_fn(model_fn, features, labels, mode, params, config):
  """model_fn's result, called with the subset of arguments it names."""
  args = fn_args(model_fn)
  kwargs = {}
  if 'labels' in args:
    kwargs['labels'] = labels
  elif labels is not None:
    raise ValueError('model_fn does not take labels, but input_fn returns '
                     'labels.')
  for name, value in (('mode', mode), ('params', params),
                      ('config', config)):
    if name in args:
      kwargs[name] = value
  return model_fn(features=features, **kwargs)


def call_input_fn(input_fn, mode, params, config, input_context=None,
                  require_params=False):
  """input_fn's result, called with the subset of arguments it names."""
  args = fn_args(input_fn)
  if require_params and 'params' not in args:
    raise ValueError(f'input_fn ({input_fn}) does not include params '
                     'argument, required by TPUEstimator to pass batch size '
                     'as params["batch_size"]')
  kwargs = {}
  for name, value in (('mode', mode), ('params', params),
                      ('config', config)):
    if name in args:
      kwargs[name] = value
  if input_context is not None and 'input_context' in args:
    kwargs['input_context'] = input_context
  return input_fn(**kwargs)
