"""Every command in MIGRATION.md runs and succeeds, in order.

On the legacy lane (TF 2.15) every command runs; on the modern lane
(TF 2.20) those that do not name the estimator runner.
"""

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests import testutil

DOC = os.path.join(testutil.REPO_ROOT, 'MIGRATION.md')
DOC_DIR = '/tmp/migration'
EVAL_LINE = re.compile(r'^(\w+): (\S+)$', re.M)


def commands():
  """The lines of the ```sh blocks of MIGRATION.md (indented ones too), in
  order."""
  with open(DOC) as f:
    blocks = re.findall(r'^ *```sh\n(.*?)^ *```', f.read(), re.M | re.S)
  return [line.strip() for block in blocks for line in block.splitlines()
          if line.strip()]


def needs_estimator(command):
  return bool(re.search(r'--runners?=(estimator\b|\w+,estimator\b)',
                        command))


def test_doc_has_commands_for_each_step():
  found = commands()
  assert all(c.startswith('python -m ') for c in found), found
  assert any('--runner=tf2' in c and 'trainer.main' in c for c in found)
  assert any('--runner=estimator --mode=evaluate' in c for c in found)
  assert any('trainer.native.convert' in c for c in found)
  assert any('--runner=native --mode=evaluate' in c for c in found)
  for pair in ('estimator,tf2', 'tf2,native', 'estimator,native'):
    assert any(f'trainer.verify_migration --runners={pair}' in c
               for c in found), pair
  # The path's order: estimator, tf2 runner, convert, native.
  first = {key: next(i for i, c in enumerate(found) if key in c)
           for key in ('--runner=estimator', 'trainer.native.convert',
                       '--runner=native')}
  assert (first['--runner=estimator'] < first['trainer.native.convert'] <
          first['--runner=native'])


def _metrics(stdout):
  return {k: float(v) for k, v in EVAL_LINE.findall(stdout)
          if re.fullmatch(r'-?[\d.e+-]+', v)}


def _run_commands(tmp_path, with_estimator):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  evaluations = {}  # runner -> metrics of its --mode=evaluate.
  ran = []
  for command in commands():
    if needs_estimator(command) and not with_estimator:
      continue
    args = shlex.split(command.replace(DOC_DIR, str(tmp_path)))
    args[0] = sys.executable
    result = subprocess.run(args, cwd=testutil.REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (command, result.stdout[-2000:],
                                    result.stderr[-3000:])
    ran.append(command)
    if '--mode=evaluate' in command:
      assert re.search(r'^global_step: 200$', result.stdout, re.M), (
          result.stdout)
      runner = re.search(r'--runner=(\w+)', command).group(1)
      evaluations[runner] = _metrics(result.stdout)
    if 'trainer.native.convert' in command:
      assert re.search(r'^converted: .*ckpt-200$', result.stdout, re.M)
  assert (tmp_path / 'native.png').stat().st_size > 0
  return ran, evaluations


@testutil.requires_estimator
def test_every_command_runs(tmp_path):
  ran, evaluations = _run_commands(tmp_path, with_estimator=True)
  assert len(ran) == len(commands())
  assert (tmp_path / 'mlp.png').stat().st_size > 0
  # The converted checkpoint evaluates as the TF1 one did: same weights,
  # same input, same metrics (float32 rounding only).
  estimator, native = evaluations['estimator'], evaluations['native']
  assert native['top_1_accuracy'] == estimator['top_1_accuracy']
  assert native['loss'] == pytest.approx(estimator['loss'], rel=1e-5)


@pytest.mark.skipif(testutil.HAS_ESTIMATOR,
                    reason='The legacy lane runs every command '
                    '(test_every_command_runs).')
def test_commands_without_estimator_run(tmp_path):
  ran, evaluations = _run_commands(tmp_path, with_estimator=False)
  assert any('--runner=native' in c for c in ran)
  assert 'native' in evaluations
