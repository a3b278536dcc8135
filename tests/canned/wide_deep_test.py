"""A wide & deep program trained on TF 2.15 goes on through the facade.

wide_deep_program.py (DNNLinearCombinedClassifier on hashed, crossed,
bucketized and embedded columns, tf.estimator.train_and_evaluate with a
LatestExporter) ran its first 12 steps under the real Estimator of TF 2.15
(its checkpoint: golden/wide_deep/first). Continued to step 24 on TF 2.20
and TF 2.21 through the facade, it gives what TF 2.15 gave continuing
(golden/wide_deep/continue.json): the loss of every step, the checkpoint,
the evaluation metrics, and what its export's signatures serve for three
tf.Examples.

Drives each facade lane's interpreter (.venv/modern, .venv/newest), so it
runs once, on a lane without Estimator; a lane not installed is skipped.
"""

import json
import os

import pytest

from tests import testutil
from tests.canned import compare
from tests.canned import regenerate

GOLDEN = os.path.join(regenerate.GOLDEN, 'wide_deep')
PYTHONS = {lane: os.path.join(testutil.REPO_ROOT, '.venv', lane, 'bin',
                              'python') for lane in ('modern', 'newest')}


@pytest.mark.skipif(testutil.HAS_ESTIMATOR,
                    reason='drives the facade lanes; it runs once, on a lane '
                    'without Estimator')
@pytest.mark.parametrize('lane', sorted(PYTHONS))
def test_tf215_wide_and_deep_continues_through_the_facade(lane, tmp_path):
  if not os.path.exists(PYTHONS[lane]):
    pytest.skip(f'.venv/{lane} is not installed (scripts/setup_env.sh)')
  with open(os.path.join(GOLDEN, 'continue.json')) as f:
    real = json.load(f)
  # What is compared was observed: 12 more steps, served predictions.
  assert len(real['losses']) == 12 and real['metrics']['global_step'] == 24
  assert len(real['served']['predict']['outputs']['probabilities']) == 3
  out = tmp_path / 'continue.json'
  regenerate.run('wide_deep_program.py', '--phase=continue',
                 f'--model_dir={tmp_path / "model"}',
                 f'--from_dir={os.path.join(GOLDEN, "first")}',
                 f'--out={out}', python=PYTHONS[lane],
                 timeout=testutil.HANG_TIMEOUT)
  with open(out) as f:
    got = json.load(f)
  for part in ('losses', 'variables', 'metrics', 'served'):
    diffs = compare.differences(real[part], got[part])
    assert not diffs, f'{lane} {part}:\n' + '\n'.join(diffs[:25])
