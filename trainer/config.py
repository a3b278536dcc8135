"""The one typed config of a run: every setting, its one default, frozen,
grouped by concern (Cluster, Schedule, Data, Architecture, Optimization,
Checkpoints: `config.schedule`, ...; each setting also reads as
`config.NAME`, and a Config is built from settings by name).

`Config` is built once, by the entry point from the parsed flags
(trainer/params.py) or by the Estimator facade from a RunConfig
(trainer/facade/distributed/backend.py), and validated once
(trainer/params.py's rules). Nothing reads a setting that is not here, and no
consumer invents a default: flags.py takes its defaults from `DEFAULTS`, tests
build configs with `Config(...)` / `replace`, and an unknown key is a TypeError
naming it.

The Config is passed down as the object: the runners, engines, runtime,
guard and memory report read its attributes (tests/layering_test.py checks
they read no setting from a dict). Model code (model_fn/, input_fn/) reads
the `params` dict Estimator gives a model_fn, made from the config by
`as_params()` (list settings as lists) at the model_fn / input_fn call.
"""

import dataclasses
import os
from typing import Optional, Tuple

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA_DIR = os.path.join(REPO_ROOT, 'data', 'digits', 'raw')


def _frozen_sequences(group, names):
  for name in names:  # Frozen all the way down.
    object.__setattr__(group, name, tuple(getattr(group, name)))


@dataclasses.dataclass(frozen=True)
class Cluster:
  """Where the run runs: TPU, strategy, runner."""

  tpu: str = ''
  tpu_zone: Optional[str] = None
  gcp_project: Optional[str] = None
  use_tpu: bool = False
  num_cores: int = 8
  # None until chosen: the entry point resolves it to the lane's default
  # (estimator where tf.estimator exists, else tf2).
  runner: Optional[str] = None
  jit_compile: str = 'auto'
  peer_timeout_secs: int = 10
  num_cpu_devices: int = 1


@dataclasses.dataclass(frozen=True)
class Schedule:
  """What runs, for how many steps, in which batches."""

  mode: str = 'train_and_evaluate'
  iterations_per_loop: int = 100
  iterations_per_loop_secs: int = 0
  train_steps: int = 3000
  eval_steps: int = 0
  steps_per_eval: int = 1000
  train_batch_size: int = 128
  eval_batch_size: int = 120
  seed: Optional[int] = 0


@dataclasses.dataclass(frozen=True)
class Data:
  """The inputs: which input_fns, the data and its pipeline."""

  input: str = 'tfrecord'
  eval_input: Optional[str] = None
  predict_input: Optional[str] = None
  serving_input_fn: Optional[str] = None
  data_dir: str = DEFAULT_DATA_DIR
  num_classes: int = 10
  image_size: int = 28
  image_channels: int = 1
  augmentation: str = 'pad_crop'
  cache: Optional[bool] = None
  shuffle_buffer: int = 10000
  tf_data_service: Optional[str] = None
  skip_corrupt_records: bool = False


@dataclasses.dataclass(frozen=True)
class Architecture:
  """The model: --model and the built-in models' own hyperparameters
  (trainer/models/builtin.py's entries name theirs), precision, slicing."""

  model: str = 'mlp'
  mlp_hidden_units: Tuple[int, ...] = (128,)
  resnet_depth: int = 50
  resnet_stem: str = 'auto'
  precision: str = 'float32'
  num_slices: int = 1
  slice: str = 'batch'

  def __post_init__(self):
    _frozen_sequences(self, ('mlp_hidden_units',))


@dataclasses.dataclass(frozen=True)
class Optimization:
  """The optimizer and its learning-rate schedule."""

  optimizer: str = 'adam'
  learning_rate: float = 0.001
  lr_schedule: str = 'cosine'
  warmup_steps: int = 0
  lr_decay_steps: Tuple[int, ...] = ()
  lr_decay_factor: float = 0.1
  momentum: float = 0.9
  weight_decay: float = 0.0
  label_smoothing: float = 0.0

  def __post_init__(self):
    _frozen_sequences(self, ('lr_decay_steps',))


@dataclasses.dataclass(frozen=True)
class Checkpoints:
  """model_dir and what is written there: checkpoints, summaries,
  profiles, exports."""

  model_dir: Optional[str] = None
  # None: MODEL_DIR/export (with_model_dir).
  export_dir: Optional[str] = None
  save_checkpoints_steps: Optional[int] = 1000
  # Only the facade sets it (RunConfig.save_checkpoints_secs); no flag.
  save_checkpoints_secs: Optional[float] = None
  save_summary_steps: int = 100
  log_step_count_steps: int = 100
  profile_steps: Tuple[int, ...] = ()
  keep_checkpoint_max: Optional[int] = 5
  init_checkpoint: Optional[str] = None
  overwrite_model_dir: bool = False

  def __post_init__(self):
    _frozen_sequences(self, ('profile_steps',))


# The concerns, in order: (attribute of Config, its type).
GROUPS = (('cluster', Cluster), ('schedule', Schedule), ('data', Data),
          ('architecture', Architecture), ('optimization', Optimization),
          ('checkpoints', Checkpoints))
# setting name -> the group holding it.
_GROUP_OF = {f.name: group for group, cls in GROUPS
             for f in dataclasses.fields(cls)}


@dataclasses.dataclass(frozen=True, init=False)
class Config:
  """Every setting of a run, grouped by concern; the flag of the same name
  documents each.

  Built from settings by name, `Config(train_steps=7, model_dir=...)` (a
  name that is no setting is a TypeError naming it); each setting reads
  as `config.NAME` or in its group, `config.schedule.train_steps`; a
  consumer that needs one concern may take its group.
  """

  cluster: Cluster
  schedule: Schedule
  data: Data
  architecture: Architecture
  optimization: Optimization
  checkpoints: Checkpoints

  def __init__(self, **settings):
    unknown = sorted(set(settings) - set(_GROUP_OF))
    if unknown:
      raise TypeError(f'{unknown} are no setting of trainer.config.Config.')
    for group, cls in GROUPS:
      object.__setattr__(self, group, cls(**{
          name: value for name, value in settings.items()
          if _GROUP_OF[name] == group}))

  def settings(self):
    """{name: value} of every setting, in KEYS order (sequences as
    tuples)."""
    return {name: getattr(self, name) for name in KEYS}

  def replace(self, **changes):
    """A copy with `changes`; an unknown name is a TypeError naming it."""
    return Config(**dict(self.settings(), **changes))

  def as_params(self):
    """The params dict model_fn/input_fn/runners read (lists as lists)."""
    params = self.settings()
    for name in _SEQUENCES:
      params[name] = list(params[name])
    return params


def _setting(name):
  group = _GROUP_OF[name]
  return property(lambda self: getattr(getattr(self, group), name),
                  doc=f'config.{group}.{name}')


for _name in _GROUP_OF:
  setattr(Config, _name, _setting(_name))
del _name

_SEQUENCES = ('mlp_hidden_units', 'lr_decay_steps', 'profile_steps')
# Every setting's name, in the order the flags document them.
KEYS = (
    'tpu', 'tpu_zone', 'gcp_project', 'use_tpu', 'num_cores',
    'iterations_per_loop', 'iterations_per_loop_secs', 'runner', 'jit_compile', 'peer_timeout_secs',
    'num_cpu_devices', 'mode', 'model', 'input', 'eval_input',
    'predict_input', 'serving_input_fn', 'model_dir', 'data_dir',
    'export_dir', 'seed', 'train_steps', 'eval_steps', 'steps_per_eval',
    'train_batch_size', 'eval_batch_size', 'num_classes', 'image_size',
    'image_channels', 'augmentation', 'cache', 'shuffle_buffer',
    'tf_data_service', 'skip_corrupt_records', 'mlp_hidden_units',
    'resnet_depth', 'resnet_stem', 'precision', 'num_slices', 'slice',
    'optimizer', 'learning_rate', 'lr_schedule', 'warmup_steps',
    'lr_decay_steps', 'lr_decay_factor', 'momentum', 'weight_decay',
    'label_smoothing', 'save_checkpoints_steps', 'save_checkpoints_secs',
    'save_summary_steps', 'log_step_count_steps', 'profile_steps',
    'keep_checkpoint_max', 'init_checkpoint', 'overwrite_model_dir')
if set(KEYS) != set(_GROUP_OF) or len(KEYS) != len(_GROUP_OF):
  raise RuntimeError('trainer/config.py: every setting must be in exactly '
                     'one group of _GROUP_OF; differs by '
                     f'{sorted(set(KEYS) ^ set(_GROUP_OF))}.')
# Keys the runners add to params for the model_fn and input_fn, beside the
# settings (as Estimator adds them).
MODEL_FN_KEYS = ('batch_size', 'context')
DEFAULTS = Config()


def from_params(params):
  """The Config of a params dict (e.g. one a test or tool changed); a key
  that is no setting is a TypeError naming it. Keys the runners add for the
  model_fn (batch_size, context, ...) are not settings: pass them apart."""
  unknown = sorted(set(params) - set(KEYS))
  if unknown:
    raise TypeError(f'params keys {unknown} are no setting of '
                    'trainer.config.Config.')
  return Config(**params)
