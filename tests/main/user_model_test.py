"""A team's own model_fn and input_fn, living outside this repository."""

import re

from tests import testutil


def _write_module(tmp_path):
  package = tmp_path / 'team_code'
  package.mkdir()
  testutil.write_legacy_user_module(package / 'linear_model.py')
  return package


def test_model_and_input_by_module_name(tmp_path):
  package = _write_module(tmp_path)
  result = testutil.run_main(
      ['--model=linear_model:model_fn', '--input=linear_model:input_fn',
       '--train_steps=30', '--steps_per_eval=30', '--eval_steps=1',
       f'--model_dir={tmp_path / "model"}'],
      env={'PYTHONPATH': str(package)})
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r'^accuracy: [\d.]+$', result.stdout, re.M), result.stdout
  assert re.search(r'^global_step: 30$', result.stdout, re.M)


def test_model_by_file_path(tmp_path):
  package = _write_module(tmp_path)
  result = testutil.run_main(
      [f'--model={package / "linear_model.py"}:model_fn', '--mode=train',
       '--train_steps=5', f'--model_dir={tmp_path / "model"}'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r'^global_step: 5$', result.stdout, re.M)


def test_missing_user_function_is_a_flag_error(tmp_path):
  package = _write_module(tmp_path)
  result = testutil.run_main(['--model=linear_model:no_such_fn'],
                             env={'PYTHONPATH': str(package)})
  assert result.returncode != 0
  assert "no attribute 'no_such_fn'" in result.stderr
