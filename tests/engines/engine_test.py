"""The tf2 engine offers the engine interface (trainer/engines/engine.py): every
method of `Engine`, taking its parameters by the same names and kinds, with
the same defaults."""

import inspect

import pytest

from trainer.engines import engine
from trainer.engines.tf2 import engine as tf2_engine

_METHODS = [name for name, member in vars(engine.Engine).items()
            if inspect.isfunction(member) and not name.startswith('_')]


def _parameters(function):
  return {p.name: (p.kind, p.default)
          for p in inspect.signature(function).parameters.values()}


def test_the_interface_has_the_calls_front_ends_make():
  assert sorted(_METHODS) == ['evaluate', 'export', 'global_step',
                              'latest_checkpoint', 'predict', 'train']


@pytest.mark.parametrize('implementation', [tf2_engine.Tf2Engine])
@pytest.mark.parametrize('method', _METHODS)
def test_engine_offers_the_method_as_the_interface(implementation, method):
  expected = _parameters(getattr(engine.Engine, method))
  found = _parameters(getattr(implementation, method))
  missing = {name: spec for name, spec in expected.items()
             if found.get(name) != spec}
  assert not missing, (f'{implementation.__name__}.{method} differs from '
                       f'Engine.{method} in {sorted(missing)}: {found}')
