"""Compute precision, handled in one place.

Variables are always float32. In bfloat16 the forward pass runs under
`tf.compat.v1.tpu.bfloat16_scope`, whose custom getter stores float32 masters
under unchanged names and returns bfloat16 casts to layers that ask for them.
"""

import contextlib

import tensorflow as tf

_DTYPES = {'float32': tf.float32, 'bfloat16': tf.bfloat16}


def compute_dtype(params):
  """tf.float32 or tf.bfloat16, from params['precision']."""
  precision = params['precision']
  if precision not in _DTYPES:
    raise ValueError(f"params['precision'] must be one of {sorted(_DTYPES)}, "
                     f'got {precision!r}.')
  return _DTYPES[precision]


def precision_scope(params):
  """Context manager for the forward pass in the configured precision."""
  if compute_dtype(params) == tf.bfloat16:
    return tf.compat.v1.tpu.bfloat16_scope()
  return contextlib.nullcontext()
