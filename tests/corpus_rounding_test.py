"""scripts/corpus_rounding.py re-judges only float rounding across TF
releases, and nothing else."""

import json
import os

import pytest

from scripts import corpus_rounding

_REF = 'efficientnet_ref-2.15_train_and_evaluate.json'


class TestCorpusRounding:

  @pytest.fixture(autouse=True)
  def _work(self, tmp_path):
    self.work = str(tmp_path)
    self._write(_REF, {'ok': True, 'metrics': {
        'loss': 63557824512.0, 'top_1_accuracy': 0.1027777791}})

  def _write(self, name, record):
    with open(os.path.join(self.work, name), 'w') as f:
      json.dump(record, f)

  def _cell(self, name, loss, top_1=0.1027777791):
    self._write(name.replace('/', '_') + '.json', {'ok': False, 'metrics': {
        'loss': loss, 'top_1_accuracy': top_1, 'global_step': 20.0}})
    return ('%s: FAIL loss %.6g != reference 6.35578e+10 (tol 1e-05) [17s]'
            % (name, loss))

  def test_rounding_on_another_release_passes_and_says_so(self):
    line = self._cell('efficientnet/tf2-2.20/evaluate-ref-ckpt',
                      63557816320.0)
    ok, text = corpus_rounding.rejudge(self.work, line)
    assert ok, text
    assert text.startswith('efficientnet/tf2-2.20/evaluate-ref-ckpt: ok ')
    assert 'max 1.3e-07' in text
    assert _REF in text
    assert text.endswith('[17s]')

  def test_same_release_stays_a_failure(self):
    for name in ('efficientnet/tf2-2.15/evaluate-ref-ckpt',
                 'efficientnet/tf2-2.15x2/evaluate-ref-ckpt',
                 'efficientnet/ref-2.15/evaluate'):
      line = self._cell(name, 63557816320.0)
      assert corpus_rounding.rejudge(self.work, line) == (False, line)

  def test_real_difference_stays_a_failure(self):
    line = self._cell('efficientnet/tf2-2.20/evaluate-ref-ckpt', 6.3e10)
    assert not corpus_rounding.rejudge(self.work, line)[0]

  def test_other_metric_beyond_tolerance_stays_a_failure(self):
    # The FAIL line names only the loss, but the cell's accuracy differs by
    # one example in 360: never re-judged.
    line = self._cell('efficientnet/tf2-2.20/evaluate-ref-ckpt',
                      63557816320.0, top_1=0.1055555)
    assert not corpus_rounding.rejudge(self.work, line)[0]

  def test_other_problems_stay_failures(self):
    name = 'efficientnet/tf2-2.20/evaluate-ref-ckpt'
    self._cell(name, 63557816320.0)
    for problems in ('exit 1: Traceback', 'metric loss missing',
                     'loss 6.35578e+10 != reference 6.35578e+10 (tol 1e-05);'
                     ' checkpoint at step 10, expected 20'):
      line = '%s: FAIL %s [17s]' % (name, problems)
      assert corpus_rounding.rejudge(self.work, line) == (False, line)

  def test_missing_reference_or_nan_stays_a_failure(self):
    line = self._cell('efficientnet/tf2-2.20/evaluate-ref-ckpt',
                      float('nan'))
    assert not corpus_rounding.rejudge(self.work, line)[0]
    os.remove(os.path.join(self.work, _REF))
    line = self._cell('efficientnet/tf2-2.20/evaluate-ref-ckpt',
                      63557816320.0)
    assert not corpus_rounding.rejudge(self.work, line)[0]
