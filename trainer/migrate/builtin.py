"""The built-in models (--model=mlp, resnet): their code goes with the
migrated program.

A team that trained a built-in model owns its code once migrated: OUT/vendor/
gets a copy of the project's model_fn/ and input_fn/ packages (their
top-level modules), whose few imports of this project are pointed at
OUT/vendor/trainer_support.py (an error base class, the Estimator names from
tf1_bridge, a TFRecord reader check) so that nothing of the project is
needed. `specs(params)` names the built-in functions as module:function for
the generated code.
"""

import os
import re

from trainer.api import errors
from trainer.models import builtin

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACKAGES = ('model_fn', 'input_fn')
# The project imports vendored code may make, and what stands for them.
_REWRITES = {
    'from trainer.api import estimator_names as _estimator':
        'from trainer_support import estimator_names as _estimator',
    'from trainer.api import errors': 'from trainer_support import errors',
    'from trainer.compat import record_reader':
        'from trainer_support import record_reader',
}
_PROJECT_IMPORT = re.compile(r'^\s*(from|import)\s+(trainer|flags)\b', re.M)
# The built-in inputs (input_fn/inputs.py), by --input name.
_INPUTS = {'tfrecord': 'input_fn.tfrecord:input_fn',
           'synthetic': 'input_fn.synthetic:input_fn'}

SUPPORT = '''"""What the vendored built-in model code took from the project that
generated this program (trainer.api, trainer.compat): written by
trainer.migrate; yours to edit."""

import types

import tensorflow as tf


class TrainerError(Exception):
  """An error whose message tells the user what to fix."""


errors = types.SimpleNamespace(TrainerError=TrainerError)

# The Estimator names tf1_bridge publishes (model.py installs them first).
estimator_names = types.SimpleNamespace(
    ModeKeys=tf.compat.v1.estimator.ModeKeys,
    EstimatorSpec=tf.compat.v1.estimator.EstimatorSpec,
    TPUEstimatorSpec=tf.compat.v1.estimator.tpu.TPUEstimatorSpec)


def _data_loss(path):
  """The DataLossError message reading TFRecord file `path` to its end
  gives, or None."""
  try:
    for _ in tf.data.TFRecordDataset(path):
      pass
  except tf.errors.DataLossError as e:
    return str(e)
  return None


record_reader = types.SimpleNamespace(data_loss=_data_loss)
'''


class VendorError(errors.TrainerError, ValueError):
  """Built-in model code imports a part of the project no program carries."""


def is_builtin(params):
  return builtin.get(params['model']) is not None


def specs(params, input_specs):
  """(model spec, {mode: input spec}) as module:function."""
  model = params['model']
  if builtin.get(model) is not None:
    model = f'model_fn.models:{model}_model_fn'
  return model, {mode: _INPUTS.get(spec, spec)
                 for mode, spec in input_specs.items()}


def vendor(out_dir):
  """Copies model_fn/ and input_fn/ into OUT/vendor/; {file: lines}."""
  lines = {}
  target = os.path.join(out_dir, 'vendor')
  for package in PACKAGES:
    os.makedirs(os.path.join(target, package), exist_ok=True)
    for name in sorted(os.listdir(os.path.join(REPO, package))):
      if not name.endswith('.py'):
        continue
      with open(os.path.join(REPO, package, name), encoding='utf-8') as f:
        source = f.read()
      for old, new in _REWRITES.items():
        source = source.replace(old, new)
      match = _PROJECT_IMPORT.search(source)
      if match:
        line = source[match.start():source.index('\n', match.start())]
        raise VendorError(
            f'{package}/{name} imports the project ({line.strip()}), which '
            'the migrated program cannot carry; add it to '
            'trainer/migrate/builtin.py\'s rewrites.')
      with open(os.path.join(target, package, name), 'w',
                encoding='utf-8') as f:
        f.write(source)
      lines[f'vendor/{package}/{name}'] = source.count('\n')
  with open(os.path.join(target, 'trainer_support.py'), 'w',
            encoding='utf-8') as f:
    f.write(SUPPORT)
  lines['vendor/trainer_support.py'] = SUPPORT.count('\n')
  return lines
