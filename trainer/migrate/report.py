"""report.json and the printed table: each comparison, its largest
difference and tolerance, what stayed TF1, what was not carried over, the
checkpoint mapping and the generated lines; `equivalent` only when every
comparison holds and nothing is unconverted."""

import json
import os
import platform

import tensorflow as tf


class Report:
  """The outcome of one migration (or --verify)."""

  def __init__(self, facts, results):
    self.facts = facts
    self.results = list(results)
    self.mapping = []
    self.absent = []
    self.lines = {}
    self.verified = False

  @property
  def unconverted(self):
    return self.facts.of_kind('unconverted')

  @property
  def equivalent(self):
    return bool(self.results) and all(r.ok for r in self.results) and (
        not self.unconverted)

  def as_json(self):
    return {
        'equivalent': self.equivalent,
        'model': self.facts.model_spec,
        'checkpoint': self.facts.checkpoint,
        'global_step': self.facts.step,
        'precision': self.facts.precision,
        'tensorflow': tf.__version__,
        'python': platform.python_version(),
        'verified_existing_program': self.verified,
        'comparisons': [vars(r) for r in self.results],
        'wrapped': [vars(c) for c in self.facts.of_kind('wrapped')],
        'converted': [vars(c) for c in self.facts.of_kind('converted')],
        'unconverted': [vars(c) for c in self.unconverted],
        'absent': [vars(c) for c in self.facts.of_kind('absent')],
        'checkpoint_mapping': [
            {'tf1_name': n, 'tf2_key': k, 'shape': s}
            for n, k, s in self.mapping],
        'made_but_not_in_checkpoint': list(self.absent),
        'learning_rate': self.facts.learning_rates,
        'generated_lines': dict(self.lines),
        'generated_lines_total': sum(self.lines.values()),
        'facts': self.facts.as_json(),
    }

  def write(self, path):
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
      json.dump(self.as_json(), f, indent=1, sort_keys=False, default=str)
    os.replace(tmp, path)

  def table(self):
    rows = [f'{"comparison":<20} {"max |diff|":>11} {"tolerance":>11}  '
            'verdict  detail']
    for r in self.results:
      diff = '-' if r.max_abs_diff is None else f'{r.max_abs_diff:.3e}'
      tol = '-' if r.tolerance is None else f'{r.tolerance:.3e}'
      rows.append(f'{r.name:<20} {diff:>11} {tol:>11}  '
                  f'{"ok" if r.ok else "FAIL":<7}  {r.detail[:70]}')
    for c in self.unconverted:
      rows.append(f'not carried over: {c.construct} ({c.where})')
    total = sum(self.lines.values())
    rows.append(f'{"EQUIVALENT" if self.equivalent else "NOT EQUIVALENT"}'
                f' | {self.facts.model_spec} | step {self.facts.step} | '
                f'{self.facts.precision} | generated {total} lines'
                f' | {len(self.facts.of_kind("wrapped"))} TF1 part(s) wrapped')
    return '\n'.join(rows)


def mapping_table(mapping, limit=40):
  """The checkpoint name mapping, printed (all of it is in report.json)."""
  lines = [f'checkpoint mapping ({len(mapping)} variables): TF1 name -> '
           'tf.train.Checkpoint key']
  for name, key, _ in mapping[:limit]:
    lines.append(f'  {name} -> {key}')
  if len(mapping) > limit:
    lines.append(f'  ... {len(mapping) - limit} more in report.json')
  return '\n'.join(lines)
