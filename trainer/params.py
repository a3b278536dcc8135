"""Builds the run's one Config from parsed flags, validated once.

trainer/config.py defines every setting and its default; this module turns
parsed flags into a Config (config_from_flags) and holds the rules between
settings (RULES): flags.py checks each at parse time (naming the flags it
reads), and validate_params checks configs built in code. model_fn/ and
input_fn/ see the config's params dict (plus what the runner adds:
batch_size, context, use_tpu, mode), so model code indexes it and never
invents a default of its own.
"""

import os
import weakref

from trainer import config as config_lib
from trainer.models import builtin

REPO_ROOT = config_lib.REPO_ROOT
DEFAULT_DATA_DIR = config_lib.DEFAULT_DATA_DIR

# Settings whose flag is parsed into another form or resolved here.
_DERIVED = frozenset((
    'use_tpu', 'runner', 'data_dir', 'mlp_hidden_units',
    'resnet_depth', 'lr_decay_steps', 'profile_steps', 'model_dir',
    'export_dir', 'save_checkpoints_secs'))
# Settings whose flag value is the setting's value, unchanged.
_PLAIN_KEYS = tuple(k for k in config_lib.KEYS if k not in _DERIVED)


class FlagResolution:
  """How the flags that model modules define too are read, filled by
  trainer/user_flags.py before parsing, {name: the trainer's default}:
   * yielded: built-in-only flags the module defines with another value
     type (and split enums' trainer view); the name is the module's, the
     config keeps the trainer's value;
   * shared: one flag for both, {name: (default, accepts)}; where it is not
     on the command line and the module's default is None or not a value
     the trainer accepts (resnet_main's --train_batch_size None, --mode
     train_and_eval), the trainer's default.
  """

  def __init__(self):
    self.yielded = {}
    self.shared = {}


_RESOLUTIONS = weakref.WeakKeyDictionary()


def resolution(flag_values):
  """The FlagResolution of `flag_values` (empty until user_flags fills it)."""
  if flag_values not in _RESOLUTIONS:
    _RESOLUTIONS[flag_values] = FlagResolution()
  return _RESOLUTIONS[flag_values]


def config_from_flags(flag_values, validate=True):
  """The Config of parsed `flag_values` (absl FlagValues), validated.

  model_dir is None when --model_dir is unset: the entry point chooses one
  (with_model_dir). Raises ValueError naming the flag at fault.
  """
  resolved = resolution(flag_values)
  value = {name: flag_values[name].value for name in flag_values}
  value.update(resolved.yielded)
  for name, (default, accepts) in resolved.shared.items():
    if not flag_values[name].present and (
        value[name] is None or not accepts(value[name])):
      value[name] = default
  settings = {key: value[key] for key in _PLAIN_KEYS}
  settings.update(
      use_tpu=(bool(value['tpu']) if value['use_tpu'] is None
               else bool(value['use_tpu'])),
      runner=value['runner'] or default_runner(),
      data_dir=value['data_dir'] or DEFAULT_DATA_DIR,
      mlp_hidden_units=[int(u) for u in value['mlp_hidden_units']],
      resnet_depth=int(value['resnet_depth']),
      lr_decay_steps=[int(s) for s in value['lr_decay_steps']],
      profile_steps=[int(s) for s in value['profile_steps']],
      export_dir=value['export_dir'])
  if value['use_synthetic_data']:
    settings['input'] = 'synthetic'
  config = with_model_dir(config_lib.Config(**settings), value['model_dir'])
  if validate:
    validate_params(config)
  return config


def params_from_flags(flag_values, validate=True):
  """The params dict of config_from_flags(flag_values)."""
  return config_from_flags(flag_values, validate).as_params()


def with_model_dir(config, model_dir):
  """`config` with `model_dir`; export_dir defaults to MODEL_DIR/export."""
  export_dir = config.export_dir or (
      os.path.join(model_dir, 'export') if model_dir else None)
  return config.replace(model_dir=model_dir, export_dir=export_dir)


def default_runner():
  """'estimator' where this TensorFlow has TPUEstimator, else 'tf2' (read
  from package metadata: flags are checked before TensorFlow starts)."""
  from trainer.runtime import startup  # pylint: disable=g-import-not-at-top
  return 'estimator' if startup.has_real_estimator() else 'tf2'


def _check_runner(params):
  if params.get('runner') == 'estimator' and default_runner() != 'estimator':
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    raise ValueError(f'--runner=estimator: TensorFlow {tf.__version__} has no '
                     'tf.estimator (removed in 2.16); use --runner=tf2.')


def check_native(params):
  """What the native runner (trainer/runners/native) cannot do, refused by
  flag (params: a Config or its params dict)."""
  if isinstance(params, config_lib.Config):
    params = params.as_params()
  native = builtin.native_names()
  if params['model'] not in native:
    raise ValueError(f'--runner=native trains the built-in models '
                     f'({", ".join(native)}), not --model='
                     f'{params["model"]}; run a model_fn with --runner=tf2.')
  if params['num_slices'] != 1:
    raise ValueError('--num_slices: the native models are not sliced; use '
                     '--num_slices=1 with --runner=native.')
  if params['init_checkpoint']:
    raise ValueError('--init_checkpoint: --runner=native starts from a '
                     'converted checkpoint in --model_dir instead (python -m '
                     'trainer.runners.native.convert).')
  if params['serving_input_fn']:
    raise ValueError('--serving_input_fn: --runner=native exports the '
                     'built-in signature on encoded images only.')


def _check_native_runner(params):
  if params['runner'] == 'native':
    check_native(params)


def _check_batches(params):
  """On TPU the global batches split over --num_cores (elsewhere the
  runners split them over their replicas and say so)."""
  if not params['use_tpu']:
    return
  for key in ('train_batch_size', 'eval_batch_size'):
    if params[key] % params['num_cores']:
      raise ValueError(f'--{key}={params[key]} is a global batch and must be '
                       f'divisible by --num_cores={params["num_cores"]}.')


def _check_use_tpu(params):
  if params['use_tpu'] and not params['tpu']:
    raise ValueError('--use_tpu needs --tpu (a TPU name or grpc:// address).')


def _check_warmup(params):
  if params['warmup_steps'] and params['warmup_steps'] >= params['train_steps']:
    raise ValueError(f'--warmup_steps={params["warmup_steps"]} must be below '
                     f'--train_steps={params["train_steps"]}.')


def _check_piecewise(params):
  if params['lr_schedule'] == 'piecewise' and not params['lr_decay_steps']:
    raise ValueError('--lr_schedule=piecewise needs --lr_decay_steps.')


def _check_model(params):
  """The built-in model's own rule (trainer/models/builtin.py), if any."""
  entry = builtin.get(params['model'])
  if entry is not None and entry.check is not None:
    entry.check(params)


def _check_slicing(params):
  """--num_slices / --slice against the model and batch they slice."""
  k, what = params['num_slices'], params['slice']
  if k == 1:
    return
  if what == 'batch':
    per_core = params['train_batch_size'] // params['num_cores']
    if per_core < k:
      raise ValueError(f'--slice=batch: the per-core batch {per_core} '
                       f'(--train_batch_size / --num_cores) is smaller than '
                       f'--num_slices={k}.')
  elif what == 'dense':
    entry = builtin.get(params['model'])
    if entry is not None and entry.dense_widths is None:
      raise ValueError('--slice=dense slices wide MLP hidden layers; '
                       f'--model={entry.name} has none (use batch or '
                       'logits).')
    if entry is not None and min(entry.dense_widths(params)) < k:
      raise ValueError(f'--slice=dense: every --mlp_hidden_units width must '
                       f'be at least --num_slices={k}.')
  elif what == 'logits' and params['num_classes'] < k:
    raise ValueError(f'--slice=logits: --num_classes={params["num_classes"]} '
                     f'is smaller than --num_slices={k}.')


def _check_profile_steps(params):
  steps = params['profile_steps']
  if steps and steps[0] >= params['train_steps']:
    raise ValueError(f'--profile_steps={steps[0]},{steps[1]} starts at or '
                     f'after --train_steps={params["train_steps"]}: nothing '
                     'would be profiled.')


# (flags a rule reads, check raising ValueError naming the flag at fault).
RULES = (
    (('runner',), _check_runner),
    (('runner', 'model', 'num_slices', 'init_checkpoint', 'serving_input_fn'),
     _check_native_runner),
    (('train_batch_size', 'eval_batch_size', 'num_cores', 'use_tpu', 'tpu'),
     _check_batches),
    (('use_tpu', 'tpu'), _check_use_tpu),
    (('warmup_steps', 'train_steps'), _check_warmup),
    (('lr_schedule', 'lr_decay_steps'), _check_piecewise),
    (('model',) + builtin.hyperparameter_keys(), _check_model),
    (('num_slices', 'slice', 'train_batch_size', 'num_cores', 'model',
      'num_classes') + builtin.hyperparameter_keys(), _check_slicing),
    (('profile_steps', 'train_steps'), _check_profile_steps),
)


def replaced(params, **changes):
  """A copy of the params dict `params` with `changes`, checked as a Config
  is: each changed name must be a setting (trainer/config.py) or a key the
  runners add for the model_fn (config.MODEL_FN_KEYS), and the rules between
  settings (RULES) must hold for the result. TypeError names an unknown key,
  ValueError the flag a rule refuses. Keys of `params` that are no setting
  are kept as they are.
  """
  settings = {k: v for k, v in changes.items()
              if k not in config_lib.MODEL_FN_KEYS}
  present = {k: params[k] for k in config_lib.KEYS if k in params}
  validate_params(config_lib.from_params(present).replace(**settings))
  return dict(params, **changes)


def validate_params(params):
  """Raises ValueError naming the flag when `params` (a Config or its params
  dict) cannot work together; returns `params`.

  Single-flag bounds (positive steps, batch sizes, ...) are the flags' own
  (flags.py); these are the rules between flags.
  """
  view = params.as_params() if isinstance(params, config_lib.Config) else (
      params)
  for _, check in RULES:
    check(view)
  return params
