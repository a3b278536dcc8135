"""What a Footprint means per TPU generation, as text, JSON and a bar chart."""

import math

GIB = 1 << 30

# (name, HBM bytes per device, what a device is). A "per-core batch" is the
# batch of one such device. Sources: Cloud TPU system architecture pages,
# cloud.google.com/tpu/docs/{v2,v3,v4,v5e,v5p} (v2: 16 GiB per chip of 2
# cores; v3: 32 GiB per chip of 2 cores; v4 and v5p chips are one megacore
# device each; v5e has one TensorCore per chip).
TPU_GENERATIONS = (
    ('v2', 8 * GIB, 'core'),
    ('v3', 16 * GIB, 'core'),
    ('v4', 32 * GIB, 'chip'),
    ('v5e', 16 * GIB, 'chip'),
    ('v5p', 95 * GIB, 'chip'),
)
COMPONENTS = ('parameter_bytes', 'optimizer_bytes', 'gradient_bytes',
              'input_bytes', 'activation_bytes', 'transient_bytes')


def max_batch(footprint, hbm_bytes):
  """Largest per-core batch whose peak fits in hbm_bytes (0 if none)."""
  free = hbm_bytes - footprint.fixed_bytes
  if free <= 0 or footprint.bytes_per_example <= 0:
    return 0
  return max(0, math.floor(free / footprint.bytes_per_example))


def tpu_fit(footprint):
  """Per generation: hbm_bytes, device, fits, max_per_core_batch."""
  return {
      name: {
          'hbm_bytes': hbm,
          'device': device,
          'fits': footprint.peak_bytes <= hbm,
          'max_per_core_batch': max_batch(footprint, hbm),
      } for name, hbm, device in TPU_GENERATIONS
  }


def report_dict(footprint, config):
  """The JSON report: configuration (a trainer.config.Config's settings),
  bytes per component, TPU fit."""
  d = {key: getattr(config, key) for key in ('model', 'precision',
                                             'num_slices', 'slice')}
  if d['num_slices'] == 1:
    d['slice'] = 'none'
  d.update(footprint.as_dict())
  d['bytes_per_example'] = footprint.bytes_per_example
  d['tpu'] = tpu_fit(footprint)
  return d


def _mib(n):
  return f'{n / (1 << 20):10.1f} MiB'


def format_text(report):
  """Human-readable lines of a report_dict."""
  lines = [f'model {report["model"]}, precision {report["precision"]}, '
           f'slice {report["slice"]} x{report["num_slices"]}, '
           f'per-core batch {report["per_core_batch"]}']
  names = {'parameter_bytes': 'parameters', 'optimizer_bytes':
           'optimizer slots', 'gradient_bytes': 'gradients', 'input_bytes':
           'input batch', 'activation_bytes': 'activations kept for backward',
           'transient_bytes': 'largest op working set', 'peak_bytes': 'peak'}
  for key, name in names.items():
    lines.append(f'  {name:<30}{_mib(report[key])}')
  lines.append('  TPU  HBM/device        fits  largest per-core batch')
  for name, fit in report['tpu'].items():
    hbm = f'{fit["hbm_bytes"] // GIB:3d} GiB/{fit["device"]}'
    lines.append(f'  {name:<4} {hbm:<14}'
                 f'    {"yes" if fit["fits"] else "no ":<4}  '
                 f'{fit["max_per_core_batch"]}')
  if 'host_input' in report:
    lines += _host_lines(report['host_input'])
  return '\n'.join(lines)


def _host_lines(host):
  """The host-RAM lines of one training input pipeline (host.py)."""
  lines = [f'  host RAM of the training input pipeline ({host["path"]}'
           + (f'; {host["records"]} records of {host["record_bytes"]:.0f} '
              'bytes' if host['records'] else '') + ')']
  names = {'shuffle_buffer_bytes': 'shuffle buffer', 'cache_bytes': 'cache',
           'prefetch_bytes': 'prefetched batches', 'total_bytes': 'total',
           'cache_build_bytes': '+ while the cache is built'}
  for key, name in names.items():
    if key != 'cache_build_bytes' or host[key]:
      lines.append(f'  {name:<30}{_mib(host[key])}')
  return lines


def plot(reports, path, title):
  """Writes a PNG of stacked bars (MiB per component), one per report."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use('Agg')
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  labels = [f'{r["precision"]}\n{r["slice"]}'
            + (f' x{r["num_slices"]}' if r['num_slices'] > 1 else '')
            for r in reports]
  fig, ax = pyplot.subplots(figsize=(max(6, 1.3 * len(reports)), 5))
  bottom = [0.0] * len(reports)
  for key in COMPONENTS:
    values = [r[key] / (1 << 20) for r in reports]
    ax.bar(labels, values, bottom=bottom,
           label=key.replace('_bytes', '').replace('_', ' '))
    bottom = [b + v for b, v in zip(bottom, values)]
  ax.set_ylabel('MiB per core (peak)')
  ax.set_title(title)
  ax.legend(fontsize='small')
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  pyplot.close(fig)
  return path
