"""Memory report before TPU time: does it fit, and how big a batch does?

  python -m trainer.memory --model=resnet --image_size=224 \\
      --train_batch_size=512 --num_cores=8 --precision=bfloat16
  python -m trainer.memory --json ...          # one JSON object
  python -m trainer.memory --plot=mem.png ...  # bars: precision x slicing
  python -m trainer.memory --xla_check ...     # compare with XLA:CPU

Takes the trainer's flags (model, precision, slicing, batch); builds the
training graph at the per-core batch without running it (footprint.py) and
reports bytes per component (report.py) and, per TPU generation, whether the
peak fits and the largest per-core batch that does; and the host RAM the
training input pipeline holds (shuffle buffer, cache, prefetched batches:
host.py).
"""

import sys  # pylint: disable=g-bad-import-order

from trainer.runtime import startup

if __name__ == '__main__':  # Before TensorFlow's first import.
  startup.prepare(sys.argv)

from absl import app
from absl import flags

import flags as trainer_flags
from trainer.runners import registry as runners

FLAGS = flags.FLAGS


def define_memory_flags(flag_values=FLAGS):
  """The trainer's flags plus this report's own."""
  trainer_flags.define_flags(flag_values)
  runners.add_flag_validator(flag_values)
  flags.DEFINE_boolean('json', False, 'Print one JSON object.',
                       flag_values=flag_values)
  flags.DEFINE_string(
      'plot', None, 'Write a PNG bar chart comparing float32/bfloat16 and '
      'each applicable slicing mode to this path.', flag_values=flag_values)
  flags.DEFINE_boolean(
      'xla_check', False, 'Also compile one step with XLA:CPU in a child '
      'process and report its buffer assignment (meaningful for float32).',
      flag_values=flag_values)


if __name__ == '__main__':  # --help and flag errors before TensorFlow.
  define_memory_flags()
  _PARSED = startup.parse_flags_first(sys.argv, 'python -m trainer.memory',
                                      __doc__, FLAGS)

# pylint: disable=g-import-not-at-top,wrong-import-position
import json

from absl import logging

from trainer import params as params_lib
from trainer.facade import install as facade
from trainer.memory import footprint
from trainer.memory import host
from trainer.memory import report as report_lib
from trainer.memory import xla
from trainer.models import builtin
from trainer.models import registry
# pylint: enable=g-import-not-at-top,wrong-import-position

PLOT_SLICES = 4  # Slices shown in --plot when --num_slices is 1.


def report(model_fn, config):
  """report_dict of one training step of model_fn under a Config, with the
  host RAM of its training input pipeline."""
  result = report_lib.report_dict(
      footprint.footprint(model_fn, config), config)
  result['host_input'] = host.input_pipeline(config)
  return result


def variants(config):
  """Configs for the plot: each precision, unsliced and per slicing mode."""
  k = config.num_slices if config.num_slices > 1 else PLOT_SLICES
  entry = builtin.get(config.model)
  dense = entry is not None and entry.dense_widths is not None
  modes = ['batch', 'logits'] + (['dense'] if dense else [])
  out = []
  for precision in ('float32', 'bfloat16'):
    out.append(params_lib.validate_params(
        config.replace(precision=precision, num_slices=1)))
    for mode in modes:
      try:
        candidate = params_lib.validate_params(config.replace(
            precision=precision, num_slices=k, slice=mode))
      except ValueError as e:
        logging.info('Plot skips slice=%s: %s', mode, e)
        continue
      out.append(candidate)
  return out


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  try:
    config = params_lib.config_from_flags(FLAGS)
    model_fn = registry.resolve_model_fn(config.model)
  except ValueError as e:
    raise app.UsageError(str(e)) from e
  result = report(model_fn, config)
  if FLAGS.xla_check:
    measured = xla.measure(config)
    total = measured['total_bytes']
    result['xla'] = measured
    result['xla_peak_error'] = (result['peak_bytes'] - total) / total
    if config.precision != 'float32':
      logging.warning('XLA:CPU computes bfloat16 in float32; its figures are '
                      'not comparable for --precision=%s.', config.precision)
  if FLAGS.plot:
    reports = [report(model_fn, c) for c in variants(config)]
    report_lib.plot(reports, FLAGS.plot,
                    f'{config.model}, per-core batch '
                    f'{result["per_core_batch"]}')
    result['plot'] = FLAGS.plot
  if FLAGS.json:
    print(json.dumps(result))
    return
  print(report_lib.format_text(result))
  if 'xla' in result:
    print(f'  XLA:CPU buffer assignment total {result["xla"]["total_bytes"]} '
          f'bytes; report peak error {100 * result["xla_peak_error"]:+.1f}%')
  if FLAGS.plot:
    print(f'  plot: {FLAGS.plot}')


if __name__ == '__main__':
  facade.install()  # Before model modules name tf.estimator (TF >= 2.16).
  app.run(main, flags_parser=_PARSED)
