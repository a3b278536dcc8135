"""The one typed config of a run: every setting, its one default, frozen.

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


@dataclasses.dataclass(frozen=True)
class Config:
  """Every setting of a run; the flag of the same name documents each."""

  # Cluster.
  tpu: str = ''
  tpu_zone: Optional[str] = None
  gcp_project: Optional[str] = None
  use_tpu: bool = False
  num_cores: int = 8
  iterations_per_loop: int = 100
  # None until chosen: the entry point resolves it to the lane's default
  # (estimator where tf.estimator exists, else tf2).
  runner: Optional[str] = None
  jit_compile: str = 'auto'
  peer_timeout_secs: int = 10
  num_cpu_devices: int = 1

  # What to run.
  mode: str = 'train_and_evaluate'
  model: str = 'mlp'
  input: str = 'tfrecord'
  eval_input: Optional[str] = None
  predict_input: Optional[str] = None
  serving_input_fn: Optional[str] = None
  model_dir: Optional[str] = None
  data_dir: str = DEFAULT_DATA_DIR
  # None: MODEL_DIR/export (with_model_dir).
  export_dir: Optional[str] = None
  seed: Optional[int] = 0

  # Steps and batches.
  train_steps: int = 3000
  eval_steps: int = 0
  steps_per_eval: int = 1000
  train_batch_size: int = 128
  eval_batch_size: int = 120

  # Data.
  num_classes: int = 10
  image_size: int = 28
  image_channels: int = 1
  augmentation: str = 'pad_crop'
  cache: Optional[bool] = None
  shuffle_buffer: int = 10000
  tf_data_service: Optional[str] = None
  skip_corrupt_records: bool = False

  # Model.
  mlp_hidden_units: Tuple[int, ...] = (128,)
  resnet_depth: int = 50
  resnet_stem: str = 'auto'
  precision: str = 'float32'
  num_slices: int = 1
  slice: str = 'batch'

  # Optimization.
  optimizer: str = 'adam'
  learning_rate: float = 0.001
  lr_schedule: str = 'cosine'
  warmup_steps: int = 0
  lr_decay_steps: Tuple[int, ...] = ()
  lr_decay_factor: float = 0.1
  momentum: float = 0.9
  weight_decay: float = 0.0
  label_smoothing: float = 0.0

  # Checkpoints, summaries, profiles.
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
    for name in _SEQUENCES:  # Frozen all the way down.
      object.__setattr__(self, name, tuple(getattr(self, name)))

  def replace(self, **changes):
    """A copy with `changes`; an unknown name is a TypeError naming it."""
    return dataclasses.replace(self, **changes)

  def as_params(self):
    """The params dict model_fn/input_fn/runners read (lists as lists)."""
    params = dataclasses.asdict(self)
    for name in _SEQUENCES:
      params[name] = list(params[name])
    return params


_SEQUENCES = ('mlp_hidden_units', 'lr_decay_steps', 'profile_steps')
KEYS = tuple(field.name for field in dataclasses.fields(Config))
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
