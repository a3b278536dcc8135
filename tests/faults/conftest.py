"""Fixtures of the fault-injection suite: the fixture program's data (one
copy per session) and, per path, one uninterrupted run that cases compare
with or start from."""

import os
import shutil

import pytest

from tests.faults import faultutil


@pytest.fixture(scope='session')
def fault_data(tmp_path_factory):
  """A data_dir of the fixture's digits (see faultutil.make_data)."""
  return faultutil.make_data(str(tmp_path_factory.mktemp('data')))


_REFERENCES = {}


@pytest.fixture()
def reference(fault_data, tmp_path_factory):
  """reference(path, train_steps) -> (model_dir, final metrics) of one
  uninterrupted run, made once per session; callers copy, never change,
  the model_dir."""

  def get(path, train_steps=400):
    key = (path.name, train_steps)
    if key not in _REFERENCES:
      model_dir = os.path.join(str(tmp_path_factory.mktemp('reference')),
                               'model')
      result, _ = faultutil.run(path.command(model_dir, fault_data,
                                             train_steps=train_steps))
      assert result.returncode == 0, result.stderr[-3000:]
      _REFERENCES[key] = (model_dir, path.final_metrics(result.stdout))
    return _REFERENCES[key]

  return get


@pytest.fixture()
def trained_copy(reference, tmp_path):
  """trained_copy(path) -> a new model_dir holding a copy of the path's
  reference run (400 steps)."""

  def get(path):
    source, _ = reference(path)
    target = str(tmp_path / 'model')
    shutil.copytree(source, target)
    return target

  return get
