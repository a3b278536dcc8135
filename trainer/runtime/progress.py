"""The one progress-line format of every runner (trainer/runtime/loop.py logs
it).

  train | step: 400 | steps/sec: 312.5 | examples/sec: 40000 | loss: 0.1234 | eta: 0:00:08
  eval | step: 400 | top_1_accuracy: 0.9861 | loss: 0.0467
"""

import datetime


def _format_value(value):
  if isinstance(value, float):
    if abs(value) >= 100:
      return f'{value:.1f}'
    return f'{value:.4f}' if abs(value) >= 1e-3 or value == 0 else (
        f'{value:.3e}')
  return str(value)


def format_line(kind, step, values):
  """'kind | step: N | key: value | ...' with values in the given order."""
  parts = [kind, f'step: {step}']
  parts += [f'{k}: {_format_value(v)}' for k, v in values.items()]
  return ' | '.join(parts)


def train_values(steps, seconds, global_batch, loss, remaining_steps):
  """The dict of a train progress line for `steps` done in `seconds`;
  global_batch None leaves examples/sec out, remaining_steps None makes the
  ETA '?'."""
  rate = steps / seconds if seconds > 0 else float('inf')
  eta = datetime.timedelta(seconds=round(remaining_steps / rate)) if (
      remaining_steps is not None and rate > 0 and
      rate != float('inf')) else '?'
  values = {'steps/sec': rate}
  if global_batch is not None:
    values['examples/sec'] = rate * global_batch
  values.update({'loss': float(loss), 'eta': str(eta)})
  return values
