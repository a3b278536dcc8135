"""How Estimator calls a model_fn and an input_fn, for runners without it.

Estimator passes `features` by keyword and each of `labels`, `mode`,
`params`, `config` only when the function names it; an input_fn gets
`mode`, `params`, `config` and `input_context` the same way (a logit_fn,
`mode`, `params`, `config`). Functions,
bound methods, callable objects and functools.partial objects work.
"""

import functools
import inspect

import tensorflow as tf


def fn_args(fn):
  """Names of the arguments `fn` can take by keyword (partials resolved)."""
  bound = set()
  while isinstance(fn, functools.partial):
    bound.update(fn.keywords or {})
    fn = fn.func
  if not inspect.isfunction(fn) and not inspect.ismethod(fn) and callable(fn):
    fn = fn.__call__
  parameters = inspect.signature(fn).parameters.values()
  return tuple(p.name for p in parameters
               if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               and p.name not in bound and p.name != 'self')


def check_model_fn(model_fn):
  """Raises ValueError as Estimator does for a model_fn it cannot call."""
  args = fn_args(model_fn)
  if 'features' not in args:
    raise ValueError(f'model_fn ({_name(model_fn)}) must include a '
                     f'`features` argument; it takes ({", ".join(args)}).')


def call_model_fn(model_fn, features, labels, mode, params, config=None):
  """model_fn(features=..., [labels], [mode], [params], [config])."""
  args = fn_args(model_fn)
  check_model_fn(model_fn)
  kwargs = {}
  if 'labels' in args:
    kwargs['labels'] = labels
  elif labels is not None:
    raise ValueError(f'model_fn ({_name(model_fn)}) does not take labels, '
                     'but input_fn returns labels.')
  for name, value in (('mode', mode), ('params', params), ('config', config)):
    if name in args:
      kwargs[name] = value
  return model_fn(features=features, **kwargs)


def call_input_fn(input_fn, mode, params, config=None, input_context=None):
  """input_fn([mode], [params], [config], [input_context])."""
  args = fn_args(input_fn)
  kwargs = {}
  for name, value in (('mode', mode), ('params', params), ('config', config),
                      ('input_context', input_context)):
    if name in args:
      kwargs[name] = value
  return input_fn(**kwargs)


def call_logit_fn(logit_fn, features, mode, params, config):
  """logit_fn(features=..., [mode], [params], [config]), as
  tf.estimator.experimental.call_logit_fn: its result must be a Tensor or
  a dict of string keys to Tensors, else ValueError."""
  args = fn_args(logit_fn)
  kwargs = {name: value for name, value in (
      ('mode', mode), ('params', params), ('config', config)) if name in args}
  result = logit_fn(features=features, **kwargs)
  valid_dict = isinstance(result, dict) and all(
      isinstance(k, str) and isinstance(v, tf.Tensor)
      for k, v in result.items())
  if not (valid_dict or isinstance(result, tf.Tensor)):
    raise ValueError('logit_fn should return a Tensor or a dictionary mapping '
                     f'strings to Tensors.  logit_fn returned: {result}')
  return result


def _name(fn):
  return getattr(fn, '__qualname__', None) or repr(fn)
