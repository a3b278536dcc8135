"""Every command in MIGRATION.md runs and succeeds, in order within each
chain of commands that share a directory.

Each lane runs what depends on its TF version: the legacy lane (TF 2.15)
every command but the tf2-vs-native comparisons (`--runners=tf2,native`,
the native runner's domain, compared on the modern lane with its other
tests); the modern lane (TF 2.20) those that do not name the estimator
runner. The verify_migration commands pass verify_migration_test's checks
(tests/verify_output.py).
"""

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests import testutil
from tests import verify_output

DOC = os.path.join(testutil.REPO_ROOT, 'MIGRATION.md')
DOC_DIR = '/tmp/migration'
EVAL_LINE = re.compile(r'^(\w+): (\S+)$', re.M)
PATH = re.compile(re.escape(DOC_DIR) + r'/[\w.]+')  # A file or directory.


def commands():
  """The lines of the ```sh blocks of MIGRATION.md (indented ones too), in
  order."""
  with open(DOC) as f:
    blocks = re.findall(r'^ *```sh\n(.*?)^ *```', f.read(), re.M | re.S)
  return [line.strip() for block in blocks for line in block.splitlines()
          if line.strip()]


def needs_tf2(command):
  """trainer.migrate and the program it writes: TF >= 2.16 only."""
  return 'trainer.migrate' in command or not command.startswith('python -m ')


def needs_estimator(command):
  return bool(re.search(r'--runners?=(estimator\b|\w+,estimator\b)',
                        command))


def compares_tf2_with_native(command):
  return '--runners=tf2,native' in command


def runs_on_this_lane(command):
  """The legacy lane: all but the tf2-vs-native comparisons; the modern
  lane: all that do not need Estimator."""
  if testutil.HAS_ESTIMATOR:
    return not compares_tf2_with_native(command) and not needs_tf2(command)
  return not needs_estimator(command)


def test_doc_has_commands_for_each_step():
  found = commands()
  # `python -m MODULE`, or a program trainer.migrate wrote under DOC_DIR.
  assert all(c.startswith(('python -m ', f'python {DOC_DIR}/'))
             for c in found), found
  assert any('trainer.migrate' in c for c in found)
  assert any('--runner=tf2' in c and 'trainer.main' in c for c in found)
  assert any('--runner=estimator --mode=evaluate' in c for c in found)
  assert any('trainer.runners.native.convert' in c for c in found)
  assert any('--runner=native --mode=evaluate' in c for c in found)
  for pair in ('estimator,tf2', 'tf2,native', 'estimator,native'):
    assert any(f'trainer.verify_migration --runners={pair}' in c
               for c in found), pair
  # The path's order: estimator, tf2 runner, convert, native.
  first = {key: next(i for i, c in enumerate(found) if key in c)
           for key in ('--runner=estimator', 'trainer.runners.native.convert',
                       '--runner=native')}
  assert (first['--runner=estimator'] <
          first['trainer.runners.native.convert'] < first['--runner=native'])


def _metrics(stdout):
  return {k: float(v) for k, v in EVAL_LINE.findall(stdout)
          if re.fullmatch(r'-?[\d.e+-]+', v)}


def _dirs(command):
  """The DOC_DIR directories a command reads or writes (plots aside)."""
  return {p for p in PATH.findall(command) if not p.endswith('.png')}


def chains():
  """The commands grouped into chains, each in doc order: commands that
  share a directory belong to one chain; chains are independent."""
  order = commands()
  groups = []  # [(dirs, commands)]
  for command in order:
    dirs = _dirs(command)
    joined = [g for g in groups if g[0] & dirs]
    groups = [g for g in groups if g not in joined]
    members = [c for g in joined for c in g[1]] + [command]
    groups.append((dirs.union(*(g[0] for g in joined)),
                   sorted(members, key=order.index)))
  return [chain for _, chain in groups]


def _chain_id(chain):
  """The first DOC_DIR path of the chain's first command, e.g. 'carry'."""
  return os.path.basename(PATH.search(chain[0]).group(0))


def test_chains_keep_every_command_once():
  assert sorted(c for chain in chains() for c in chain) == sorted(commands())
  carry = next(c for c in chains() if any('/carry' in x for x in c))
  assert any('trainer.runners.native.convert' in c for c in carry)
  assert any('--runner=native --mode=export' in c for c in carry)
  # Every command runs on one lane at least.
  assert not [c for c in commands()
              if needs_estimator(c) and compares_tf2_with_native(c)]
  assert any(compares_tf2_with_native(c) for c in commands())


def _precision(command):
  match = re.search(r'--precision=(\w+)', command)
  return match.group(1) if match else 'float32'


def _run_chain(tmp_path, chain):
  """Runs the chain's commands this lane runs in order with DOC_DIR at
  tmp_path; the commands run, and {runner: metrics} of their
  --mode=evaluate."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
  evaluations = {}
  ran = []
  for command in chain:
    if not runs_on_this_lane(command):
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
    if 'trainer.runners.native.convert' in command:
      assert re.search(r'^converted: .*ckpt-200$', result.stdout, re.M)
    if 'trainer.migrate' in command:
      assert re.search(r'^EQUIVALENT \| ', result.stdout, re.M), (
          result.stdout[-3000:])
    if command.endswith('--eval_steps=2') and '/train.py' in command:
      assert re.search(r'^train \| step: 20 \|', result.stdout, re.M)
      assert re.search(r'^global_step: 20$', result.stdout, re.M)
    if 'trainer.verify_migration' in command:
      plot = re.search(r'--plot=(\S+)', command).group(1)
      verify_output.check_ok(
          result.stdout, int(re.search(r'--steps=(\d+)', command).group(1)),
          _precision(command), plot.replace(DOC_DIR, str(tmp_path)))
  return ran, evaluations


@pytest.mark.parametrize('chain', chains(), ids=_chain_id)
def test_every_command_runs(tmp_path, chain):
  """On the legacy lane every command but the tf2-vs-native comparisons;
  on the modern lane those that do not need Estimator."""
  ran, evaluations = _run_chain(tmp_path, chain)
  skipped = [c for c in chain if c not in ran]
  if testutil.HAS_ESTIMATOR:
    assert all(compares_tf2_with_native(c) or needs_tf2(c)
               for c in skipped), skipped
  else:
    assert all(needs_estimator(c) for c in skipped), skipped
  if not ran:
    pytest.skip('no command of this chain runs on this lane')
  if 'estimator' in evaluations and 'native' in evaluations:
    # The converted checkpoint evaluates as the TF1 one did: same weights,
    # same input, same metrics (float32 rounding only).
    estimator, native = evaluations['estimator'], evaluations['native']
    assert native['top_1_accuracy'] == estimator['top_1_accuracy']
    assert native['loss'] == pytest.approx(estimator['loss'], rel=1e-5)
  elif any('trainer.runners.native.convert' in c for c in ran):
    assert 'native' in evaluations
