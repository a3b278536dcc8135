"""The estimator suite's recorded reference lane
(tests/estimator_suite_reference/, written by
scripts/record_estimator_suite_reference.sh): every module CI runs through
the facade has the real Estimator's results, and scripts/estimator_suite.sh
refuses a recording that no longer matches the shared suite.

Reads the real source tree and ../shared beside it (Bazel target tagged
`external`); skips where ../shared/estimator_suite is missing.
"""

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
REF = os.path.join(REPO_ROOT, 'tests', 'estimator_suite_reference')
SCRIPT = os.path.join(REPO_ROOT, 'scripts', 'estimator_suite.sh')
SUITE = os.path.join(os.path.dirname(REPO_ROOT), 'shared', 'estimator_suite')
needs_suite = pytest.mark.skipif(
    not os.path.isfile(os.path.join(SUITE, 'run.sh')),
    reason=f'no shared estimator suite at {SUITE}')


def _ci_modules():
  """The modules scripts/estimator_suite.sh runs: its modules=(...) and
  modules+=(...) lines."""
  with open(SCRIPT) as f:
    lines = re.findall(r'^modules\+?=\(([^)]*)\)$', f.read(), re.M)
  return [m for line in lines for m in line.split()]


def _run_sh_modules():
  """run.sh's $ALL and $CANNED."""
  with open(os.path.join(SUITE, 'run.sh')) as f:
    text = f.read()
  return [m for name in ('ALL', 'CANNED') for m in re.search(
      rf'^{name}="([^"]*)"$', text, re.M).group(1).split()]


def _check(shared_dir):
  return subprocess.run(
      ['bash', SCRIPT, '--check'], cwd=REPO_ROOT, capture_output=True,
      text=True, timeout=120, env=dict(os.environ, SHARED_DIR=shared_dir))


def test_every_ci_module_has_the_reference_results():
  modules = _ci_modules()
  assert {'estimator_test', 'training_test', 'run_config_test',
          'tpu_config_test'} <= set(modules)
  if os.path.isfile(os.path.join(SUITE, 'run.sh')):
    modules += _run_sh_modules()  # The canned ones are recorded already.
  for module in modules:
    cases = list(ET.parse(os.path.join(REF, 'legacy', f'{module}.xml'))
                 .getroot().iter('testcase'))
    passed = [c for c in cases if not list(c)]  # No failure, error, skip.
    assert len(passed) >= 10, (module, len(cases))
    with open(os.path.join(REF, 'legacy', f'{module}.rc')) as f:
      status, seconds = f.read().split()
    assert int(status) in (0, 1) and int(seconds) > 0, module


@needs_suite
def test_the_recording_matches_the_shared_suite():
  result = _check(os.path.dirname(SUITE))
  assert result.returncode == 0, result.stdout + result.stderr
  assert 'recorded reference is current' in result.stdout


@needs_suite
@pytest.mark.parametrize('change', ['edited', 'added'])
def test_a_changed_upstream_file_fails_the_check(tmp_path, change):
  copy = tmp_path / 'estimator_suite'
  shutil.copytree(SUITE, copy, copy_function=shutil.copyfile)
  for directory, _, _ in os.walk(copy):  # The shared copy is read-only.
    os.chmod(directory, 0o755)
  upstream = copy / 'upstream' / 'tensorflow_estimator' / 'python' / 'estimator'
  if change == 'edited':
    with open(upstream / 'run_config_test.py', 'a') as f:
      f.write('\n# edited\n')
  else:
    (upstream / 'new_test.py').write_text('def test_new():\n  pass\n')
  result = _check(str(tmp_path))
  assert result.returncode == 1
  assert 'rerun scripts/record_estimator_suite_reference.sh' in result.stderr
  assert result.stdout.endswith('estimator_suite: 0 passed, 1 failed\n')
