"""Turns parsed flags into the one validated `params` dict passed down.

model_fn/ and input_fn/ see only this dict (plus what the runner adds:
batch_size, context, use_tpu, mode).
"""

import os
import tempfile

from absl import logging

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA_DIR = os.path.join(REPO_ROOT, 'data', 'digits', 'raw')

# Flags copied into params unchanged.
_PLAIN_KEYS = (
    'tpu', 'tpu_zone', 'gcp_project', 'num_cores', 'iterations_per_loop',
    'mode', 'model', 'input', 'export_dir', 'seed', 'train_steps',
    'eval_steps', 'steps_per_eval', 'train_batch_size', 'eval_batch_size',
    'num_classes', 'image_size', 'image_channels', 'augmentation', 'cache',
    'shuffle_buffer', 'resnet_stem', 'precision', 'optimizer',
    'learning_rate', 'lr_schedule', 'warmup_steps', 'lr_decay_factor',
    'momentum', 'weight_decay', 'label_smoothing', 'save_checkpoints_steps',
    'keep_checkpoint_max', 'init_checkpoint', 'num_slices', 'slice',
    'skip_corrupt_records', 'overwrite_model_dir', 'num_cpu_devices',
    'tf_data_service',
)


def params_from_flags(flag_values):
  """The params dict for the parsed `flag_values`, validated."""
  f = flag_values
  params = {key: f[key].value for key in _PLAIN_KEYS}
  params['use_tpu'] = bool(f.tpu) if f.use_tpu is None else bool(f.use_tpu)
  params['runner'] = f.runner or default_runner()
  params['model_dir'] = f.model_dir or tempfile.mkdtemp(prefix='trainer-')
  if not f.model_dir:
    logging.info('No --model_dir: using new directory %s', params['model_dir'])
  params['data_dir'] = f.data_dir or DEFAULT_DATA_DIR
  if f.use_synthetic_data:
    params['input'] = 'synthetic'
  params['mlp_hidden_units'] = [int(u) for u in f.mlp_hidden_units]
  params['resnet_depth'] = int(f.resnet_depth)
  params['lr_decay_steps'] = [int(s) for s in f.lr_decay_steps]
  params['export_dir'] = f.export_dir or os.path.join(params['model_dir'],
                                                      'export')
  validate_params(params)
  return params


def default_runner():
  """'estimator' where this TensorFlow has TPUEstimator, else 'tf2'."""
  from trainer import estimator_compat  # pylint: disable=g-import-not-at-top
  return 'estimator' if estimator_compat.has_estimator() else 'tf2'


def validate_params(params):
  """Raises ValueError naming the flag when `params` cannot work together."""
  if params.get('runner') == 'estimator' and default_runner() != 'estimator':
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    raise ValueError(f'--runner=estimator: TensorFlow {tf.__version__} has no '
                     'tf.estimator (removed in 2.16); use --runner=tf2.')
  for key in ('train_batch_size', 'eval_batch_size'):
    if params[key] % params['num_cores']:
      raise ValueError(f'--{key}={params[key]} is a global batch and must be '
                       f'divisible by --num_cores={params["num_cores"]}.')
  for key in ('train_steps', 'steps_per_eval', 'iterations_per_loop',
              'train_batch_size', 'eval_batch_size', 'save_checkpoints_steps'):
    if params[key] <= 0:
      raise ValueError(f'--{key} must be a positive integer, got '
                       f'{params[key]}.')
  if params['use_tpu'] and not params['tpu']:
    raise ValueError('--use_tpu needs --tpu (a TPU name or grpc:// address).')
  if params['warmup_steps'] and params['warmup_steps'] >= params['train_steps']:
    raise ValueError(f'--warmup_steps={params["warmup_steps"]} must be below '
                     f'--train_steps={params["train_steps"]}.')
  if params['lr_schedule'] == 'piecewise' and not params['lr_decay_steps']:
    raise ValueError('--lr_schedule=piecewise needs --lr_decay_steps.')
  if params['model'] == 'mlp' and not params['mlp_hidden_units']:
    raise ValueError('--mlp_hidden_units must name at least one layer.')
  _validate_slicing(params)
  return params


def _validate_slicing(params):
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
    if params['model'] == 'resnet':
      raise ValueError('--slice=dense slices wide MLP hidden layers; '
                       '--model=resnet has none (use batch or logits).')
    if params['model'] == 'mlp' and min(params['mlp_hidden_units']) < k:
      raise ValueError(f'--slice=dense: every --mlp_hidden_units width must '
                       f'be at least --num_slices={k}.')
  elif what == 'logits' and params['num_classes'] < k:
    raise ValueError(f'--slice=logits: --num_classes={params["num_classes"]} '
                     f'is smaller than --num_slices={k}.')
