"""Runs conformance cells in this process and writes their observables.

  python -m tests.conformance.run --api=real|project --out=FILE [--cells=a,b]

--api=real: tf.compat.v1.estimator of TF 2.15 (the spec); --api=project: on
TF >= 2.16 the facade trainer.legacy installs as tf.compat.v1.estimator (what
a user's program gets), on TF 2.15 the facade's own classes. The CPU is split
into 2 logical devices first (the 2-replica cells' MirroredStrategy).
FILE: {cell name: observables} (JSON), with each cell's seconds in 'time'.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import types

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')


def _split_cpu():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpu = tf.config.list_physical_devices('CPU')[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


def _namespace(est, tpu, export, inputs):
  names = {n: getattr(est, n) for n in (
      'Estimator', 'EstimatorSpec', 'RunConfig', 'WarmStartSettings',
      'TrainSpec', 'EvalSpec', 'train_and_evaluate', 'FinalExporter',
      'LatestExporter', 'LinearClassifier', 'DNNClassifier',
      'DNNLinearCombinedClassifier', 'BaselineRegressor', 'BinaryClassHead',
      'RegressionHead', 'MultiHead')}
  names.update(TPUEstimator=tpu.TPUEstimator,
               TPUEstimatorSpec=tpu.TPUEstimatorSpec,
               TPURunConfig=tpu.RunConfig, TPUConfig=tpu.TPUConfig,
               ServingInputReceiver=export.ServingInputReceiver,
               TensorServingInputReceiver=export.TensorServingInputReceiver,
               build_parsing_serving_input_receiver_fn=(
                   export.build_parsing_serving_input_receiver_fn),
               numpy_input_fn=inputs.numpy_input_fn, export=export)
  return types.SimpleNamespace(**names)


def api_for(kind):
  """The Estimator API a cell's program is given: 'real' or 'project'."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from trainer.api import estimator_names as estimator_compat  # pylint: disable=g-import-not-at-top
  from trainer.facade import install  # pylint: disable=g-import-not-at-top
  if kind == 'real':
    if not estimator_compat.has_estimator():
      raise SystemExit(f'TF {tf.__version__} has no real Estimator.')
    est = tf.compat.v1.estimator
    return _namespace(est, est.tpu, est.export, est.inputs)
  if install.install() or install.installed():
    est = tf.compat.v1.estimator  # The facade, where users find it.
    assert getattr(est, install.FACADE_MARK, False), est
    return _namespace(est, est.tpu, est.export, est.inputs)
  spaces = {name: names if isinstance(names, types.ModuleType) else
            types.SimpleNamespace(**names)
            for name, (names, _) in install._namespaces().items()}  # pylint: disable=protected-access
  prefix = 'tensorflow.compat.v1.estimator'
  return _namespace(spaces[prefix], spaces[prefix + '.tpu'],
                    spaces[prefix + '.export'], spaces[prefix + '.inputs'])


def main(argv):
  parser = argparse.ArgumentParser()
  parser.add_argument('--api', choices=('real', 'project'), required=True)
  parser.add_argument('--out', required=True)
  parser.add_argument('--cells', default='')
  args = parser.parse_args(argv)
  from trainer.runtime import startup  # pylint: disable=g-import-not-at-top
  startup.select_keras()
  _split_cpu()
  api = api_for(args.api)
  from tests.conformance import cells as cells_lib  # pylint: disable=g-import-not-at-top
  from tests.conformance import execute  # pylint: disable=g-import-not-at-top
  wanted = set(filter(None, args.cells.split(',')))
  results = {}
  with tempfile.TemporaryDirectory() as workdir:
    shared = execute.Shared(workdir, real=args.api == 'real')
    for cell in cells_lib.CELLS:
      if wanted and cell.name not in wanted:
        continue
      start = time.time()
      results[cell.name] = execute.run_cell(cell, api, shared)
      results[cell.name]['time'] = round(time.time() - start, 2)
      print(f'conformance: {cell.name} {results[cell.name]["time"]} s',
            file=sys.stderr, flush=True)
  with open(args.out, 'w') as f:
    json.dump(results, f, indent=1, sort_keys=True)
  return 0


if __name__ == '__main__':
  status = main(sys.argv[1:])
  # The results are written: exit without the interpreter's teardown, in
  # which TF destroys the tf.data multi-device iterators the 2-replica cells
  # leave behind (MirroredStrategy's distributed datasets), each destructor
  # waiting for its iterator's autotuning thread to wake (up to 60 s; gdb
  # stack in docs/performance.md). Measured on the modern lane: 67 s after
  # 6 such cells, minutes after the whole matrix on a loaded machine.
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access
