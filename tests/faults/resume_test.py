"""Restarting on a model_dir whose newest checkpoint is broken, on both
paths: its .data cut short (every restart failed with `Read less bytes
than requested`), or the `checkpoint` state naming a checkpoint that is
not there (the launcher's programs could not restart). The broken files
are moved aside, one warning names them, training resumes from the newest
complete checkpoint and reaches the final step."""

import glob
import os
import re

import pytest

from tests.faults import cases
from tests.faults import faultutil


def _newest(model_dir):
  return faultutil.latest_step(model_dir)


def _resume(path, model_dir, fault_data, newest):
  result, seconds = faultutil.run(path.command(
      model_dir, fault_data, train_steps=newest + 50))
  assert result.returncode == 0, result.stderr[-3000:]
  assert faultutil.latest_step(model_dir) == newest + 50
  faultutil.assert_every_checkpoint_loads(model_dir)
  return result, seconds


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_truncated_newest_checkpoint_is_moved_aside(path_name, fault_data,
                                                      trained_copy):
  path = faultutil.PATHS[path_name]
  model_dir = trained_copy(path)
  newest = _newest(model_dir)
  data, = glob.glob(os.path.join(model_dir, f'model.ckpt-{newest}.data-*'))
  with open(data, 'r+b') as f:
    f.truncate(os.path.getsize(data) // 2)
  result, seconds = _resume(path, model_dir, fault_data, newest)
  warning, = [l for l in result.stderr.splitlines()
              if 'moved aside to' in l]
  assert re.search(cases.pattern(
      'truncated-checkpoint', MODEL_DIR=model_dir, CKPT=f'model.ckpt-{newest}',
      DATA=os.path.basename(data),
      PREVIOUS=f'model.ckpt-{newest - 50}'), warning), warning
  quarantine, = glob.glob(os.path.join(model_dir, 'corrupt-*'))
  assert os.path.basename(data) in os.listdir(quarantine)  # Not deleted.
  faultutil.Record(path.name).add(
      "newest checkpoint's .data truncated", result.returncode, seconds,
      warning[warning.index('model_dir'):], True)


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_a_state_naming_a_missing_checkpoint_falls_back(path_name, fault_data,
                                                        trained_copy):
  path = faultutil.PATHS[path_name]
  model_dir = trained_copy(path)
  newest = _newest(model_dir)
  for name in glob.glob(os.path.join(model_dir, f'model.ckpt-{newest}.*')):
    os.remove(name)
  result, seconds = _resume(path, model_dir, fault_data, newest)
  warning, = [l for l in result.stderr.splitlines()
              if 'the checkpoint state named' in l]
  assert re.search(cases.pattern(
      'missing-checkpoint', MODEL_DIR=model_dir, CKPT=f'model.ckpt-{newest}',
      PREVIOUS=f'model.ckpt-{newest - 50}'), warning), warning
  faultutil.Record(path.name).add(
      '`checkpoint` file names a missing checkpoint', result.returncode,
      seconds, warning[warning.index('model_dir'):], True)


def test_main_evaluates_past_a_truncated_newest_checkpoint(fault_data,
                                                           trained_copy):
  path = faultutil.MAIN
  model_dir = trained_copy(path)
  newest = _newest(model_dir)
  data, = glob.glob(os.path.join(model_dir, f'model.ckpt-{newest}.data-*'))
  with open(data, 'r+b') as f:
    f.truncate(os.path.getsize(data) // 2)
  result, _ = faultutil.run(path.command(model_dir, fault_data,
                                         '--mode=evaluate'))
  assert result.returncode == 0, result.stderr[-3000:]
  assert f'global_step: {newest - 50}' in result.stdout
  assert re.search(cases.pattern('truncated-checkpoint', MODEL_DIR=model_dir,
                                 CKPT=f'model.ckpt-{newest}'), result.stderr)
