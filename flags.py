"""Command-line flags of the trainer, defined inside a function.

Nothing is defined at import time, so tests and libraries can import this
module without touching the global flag registry. Binaries call
`define_flags()` once before `app.run`. Only `trainer/` reads the parsed
values; it turns them into a validated `params` dict (trainer/params.py),
whose rules between flags also run here, at parse time.
"""

from absl import flags

from trainer import config as config_lib
from trainer import params as params_lib

MODES = ('train', 'evaluate', 'train_and_evaluate', 'predict', 'export')
PRECISIONS = ('float32', 'bfloat16')
OPTIMIZERS = ('sgd', 'momentum', 'adam')
LR_SCHEDULES = ('constant', 'cosine', 'linear', 'piecewise')
AUGMENTATIONS = ('none', 'pad_crop', 'inception_crop')
RESNET_STEMS = ('auto', 'imagenet', 'small')
SLICE_MODES = ('batch', 'dense', 'logits')
JIT_SETTINGS = ('auto', 'on', 'off')
_D = config_lib.DEFAULTS  # Every default: one definition, there.


def define_flags(flag_values=flags.FLAGS, validate_on=None):
  """Defines every trainer flag and its validators on `flag_values`.

  validate_on: the FlagValues the rules between flags read at parse time
  (default: flag_values); trainer/user_flags.py defines the flags apart and
  then moves them, sharing same-named flags with model modules.
  """
  f = flag_values

  # Cluster.
  flags.DEFINE_string(
      'tpu', _D.tpu,
      'Cloud TPU name or grpc://host:port address. Empty: no TPU.',
      flag_values=f)
  flags.DEFINE_string('tpu_zone', _D.tpu_zone, 'GCE zone of the Cloud TPU.',
                      flag_values=f)
  flags.DEFINE_string(
      'gcp_project', _D.gcp_project,
      'GCP project of the Cloud TPU.',
                      flag_values=f)
  flags.DEFINE_boolean(
      'use_tpu', None, 'Run on TPU. Default: on iff --tpu is set.',
      flag_values=f)
  flags.DEFINE_integer(
      'num_cores', _D.num_cores,
      'TPU cores (shards) the global batch is split over.',
      lower_bound=1, flag_values=f)
  flags.DEFINE_integer(
      'iterations_per_loop', _D.iterations_per_loop,
      'Steps run on the device per host loop (one session.run on TPU).',
      lower_bound=1, flag_values=f)
  flags.DEFINE_integer(
      'iterations_per_loop_secs', _D.iterations_per_loop_secs,
      'Size each host loop to about this many seconds instead of '
      '--iterations_per_loop steps, learned from the loops run so far (the '
      "first is one step): TPUEstimator's TPUConfig(iterations_per_loop="
      "'60s'). 0: off.",
      lower_bound=0, flag_values=f)
  flags.DEFINE_string(  # Checked against trainer/runners/registry.py's.
      'runner', None,
      'One of the registered runners (trainer/runners/registry.py). '
      'estimator: the real TPUEstimator; tf2: the same model_fn under '
      'tf.distribute; native: the TF2-native Keras version of a built-in '
      'model, trained with Orbit (object-based checkpoints: convert a TF1 '
      'model_dir with python -m trainer.runners.native.convert). Default: '
      'estimator where tf.estimator exists (TF <= 2.15), tf2 otherwise.',
      flag_values=f)
  flags.DEFINE_enum(
      'jit_compile', _D.jit_compile, JIT_SETTINGS,
      'tf2 runner: XLA-compile the step. auto: on TPU (always compiled); '
      'off on CPU and GPU, where XLA measured slower here. on/off force it.',
      flag_values=f)
  flags.DEFINE_integer(
      'peer_timeout_secs', _D.peer_timeout_secs,
      'Several workers (TF_CONFIG): seconds without heartbeats after which a '
      'worker counts as lost (killed, host down) and the others stop with an '
      'error naming it instead of waiting in a collective. 0: TensorFlow\'s '
      'default (10 s).', lower_bound=0, flag_values=f)
  flags.DEFINE_integer(
      'num_cpu_devices', _D.num_cpu_devices,
      'tf2 runner: split the CPU into N logical devices (MirroredStrategy '
      'over N replicas) to exercise multi-replica code without accelerators.',
      lower_bound=1, flag_values=f)

  # What to run.
  flags.DEFINE_enum('mode', _D.mode, MODES, 'What to do.',
                    flag_values=f)
  flags.DEFINE_string(
      'model', _D.model,
      'Built-in model name (mlp, resnet) or package.module:function naming '
      'a model_fn(features, labels, mode, params).', flag_values=f)
  flags.DEFINE_string(
      'input', _D.input,
      'Built-in input name (tfrecord, synthetic) or package.module:function '
      "naming an input_fn(params); params['mode'] is train, eval or infer.",
      flag_values=f)
  flags.DEFINE_string(
      'eval_input', _D.eval_input,
      'input_fn for evaluation, as --input names one. Default: --input.',
      flag_values=f)
  flags.DEFINE_string(
      'predict_input', _D.predict_input,
      'input_fn for prediction, as --input names one. Default: '
      '--eval_input, else --input.', flag_values=f)
  flags.DEFINE_string(
      'serving_input_fn', _D.serving_input_fn,
      'package.module:function or file.py:function naming a '
      'serving_input_receiver_fn, as Estimator.export_saved_model takes it '
      '(TF1 placeholders included), for --mode=export. Default: the '
      'built-in models\' signature taking encoded images (image_bytes).',
      flag_values=f)
  flags.DEFINE_string(
      'model_dir', None,
      'Checkpoints and summaries. Default: a new temporary directory.',
      flag_values=f)
  flags.DEFINE_string(
      'data_dir', None,
      'Directory of train-* and validation-* TFRecord files (local or gs://). '
      'Default: the embedded handwritten-digits data shipped in data/digits.',
      flag_values=f)
  flags.DEFINE_boolean(
      'use_synthetic_data', False,
      'Feed random images instead of files (benchmarks). Same as '
      '--input=synthetic.', flag_values=f)
  flags.DEFINE_string(
      'export_dir', _D.export_dir,
      'Where --mode=export writes the SavedModel. Default: MODEL_DIR/export.',
      flag_values=f)
  flags.DEFINE_integer(
      'seed', _D.seed,
      'Graph-level random seed.', flag_values=f)

  # Steps and batches.
  flags.DEFINE_integer('train_steps', _D.train_steps, 'Total training steps.',
                       lower_bound=1, flag_values=f)
  flags.DEFINE_integer(
      'eval_steps', _D.eval_steps,
      'Evaluation steps. 0: one pass over the evaluation files, dropping '
      'the last partial batch.', lower_bound=0, flag_values=f)
  flags.DEFINE_integer(
      'steps_per_eval', _D.steps_per_eval,
      'Training steps between evaluations in train_and_evaluate.',
      lower_bound=1, flag_values=f)
  flags.DEFINE_integer(
      'train_batch_size', _D.train_batch_size,
      'Global training batch.',
                       lower_bound=1, flag_values=f)
  flags.DEFINE_integer(
      'eval_batch_size', _D.eval_batch_size,
      'Global evaluation and prediction batch.',
      lower_bound=1, flag_values=f)

  # Data.
  flags.DEFINE_integer(
      'num_classes', _D.num_classes,
      'Number of label classes.',
                       lower_bound=2, flag_values=f)
  flags.DEFINE_integer(
      'image_size', _D.image_size,
      'Height and width fed to the model.',
                       lower_bound=1, flag_values=f)
  flags.DEFINE_integer(
      'image_channels', _D.image_channels,
      'Channels fed to the model.',
                       lower_bound=1, flag_values=f)
  flags.DEFINE_enum('augmentation', _D.augmentation, AUGMENTATIONS,
                    'Training-time augmentation.', flag_values=f)
  flags.DEFINE_boolean(
      'cache', _D.cache,
      'Hold the decoded training split in host memory. Unset: only a split '
      'of raw images at the input shape whose files total at most 256 MiB '
      '(input_fn/in_memory.py); --nocache: never.', flag_values=f)
  flags.DEFINE_integer(
      'shuffle_buffer', _D.shuffle_buffer,
      'Shuffle buffer (records).',
                       lower_bound=1, flag_values=f)
  flags.DEFINE_string(
      'tf_data_service', _D.tf_data_service,
      'grpc://HOST:PORT of a tf.data service dispatcher: training input is '
      'preprocessed by its workers, one stream shared by all hosts '
      '(input_fn/data_service.py). Evaluation reads locally.',
      flag_values=f)
  flags.DEFINE_boolean(
      'skip_corrupt_records', _D.skip_corrupt_records,
      'Skip a corrupt TFRecord record (and, as TF reads, the rest of its file) '
      'instead of stopping; the files are scanned once first and the '
      'corrupt records counted.', flag_values=f)

  # Model.
  flags.DEFINE_list('mlp_hidden_units', [str(u) for u in _D.mlp_hidden_units],
                    'Width of each hidden layer of the MLP.', flag_values=f)
  flags.DEFINE_enum(
      'resnet_depth', str(_D.resnet_depth),
      ('18', '34', '50', '101'),
                    'ResNet v1.5 depth.', flag_values=f)
  flags.DEFINE_enum(
      'resnet_stem', _D.resnet_stem, RESNET_STEMS,
      'ResNet stem: imagenet (7x7/2 conv + max pool), small (3x3/1 conv), or '
      'auto (imagenet for images of 64 pixels and more).', flag_values=f)
  flags.DEFINE_enum('precision', _D.precision, PRECISIONS,
                    'Compute precision; variables stay float32.',
                    flag_values=f)
  flags.DEFINE_integer(
      'num_slices', _D.num_slices,
      'Compute the op chosen by --slice in this many slices to cut memory. '
      '1: no slicing.', lower_bound=1, flag_values=f)
  flags.DEFINE_enum(
      'slice', _D.slice, SLICE_MODES,
      'What --num_slices slices: batch (per-core batch in micro-batches with '
      'gradient accumulation, one update per step), dense (wide MLP hidden '
      'layers along their features), logits (logits + softmax cross-entropy '
      'per slice of classes).', flag_values=f)

  # Optimization.
  flags.DEFINE_enum('optimizer', _D.optimizer, OPTIMIZERS, 'Optimizer.',
                    flag_values=f)
  flags.DEFINE_float('learning_rate', _D.learning_rate, 'Peak learning rate.',
                     lower_bound=0.0, flag_values=f)
  flags.DEFINE_enum('lr_schedule', _D.lr_schedule, LR_SCHEDULES,
                    'Decay after warmup.', flag_values=f)
  flags.DEFINE_integer('warmup_steps', _D.warmup_steps, 'Linear warmup steps.',
                       lower_bound=0, flag_values=f)
  flags.DEFINE_list(
      'lr_decay_steps', [str(s) for s in _D.lr_decay_steps],
      'Steps at which the piecewise schedule multiplies the rate by '
      '--lr_decay_factor.', flag_values=f)
  flags.DEFINE_float(
      'lr_decay_factor', _D.lr_decay_factor,
      'Piecewise decay factor.',
                     lower_bound=0.0, flag_values=f)
  flags.DEFINE_float(
      'momentum', _D.momentum,
      'Momentum of the momentum optimizer.',
                     lower_bound=0.0, flag_values=f)
  flags.DEFINE_float(
      'weight_decay', _D.weight_decay,
      'L2 coefficient on weights; batch-norm variables and biases are skipped.',
      lower_bound=0.0, flag_values=f)
  flags.DEFINE_float('label_smoothing', _D.label_smoothing, 'Label smoothing.',
                     lower_bound=0.0, upper_bound=1.0, flag_values=f)

  # Checkpoints.
  flags.DEFINE_integer('save_checkpoints_steps', _D.save_checkpoints_steps,
                       'Steps between checkpoints.', lower_bound=1,
                       flag_values=f)
  flags.DEFINE_integer(
      'save_summary_steps', _D.save_summary_steps,
      'Steps between Estimator\'s training summaries (loss and the '
      'model_fn\'s tf.compat.v1.summary ops), under both runners. 0: none.',
      lower_bound=0, flag_values=f)
  flags.DEFINE_integer(
      'log_step_count_steps', _D.log_step_count_steps,
      'Steps between Estimator\'s global_step/sec summaries (and its '
      '"loss = ..., step = ..." log lines), under both runners. 0: none.',
      lower_bound=0, flag_values=f)
  flags.DEFINE_list(
      'profile_steps', [str(s) for s in _D.profile_steps],
      'N,M: write a TensorBoard profile (tf.profiler) of the steps that take '
      'global_step from N to M into --model_dir (plugins/profile/). The '
      'estimator runner starts and stops at those steps; the tf2 runner at '
      'the boundaries of the loops (--iterations_per_loop steps) that hold '
      'them.', flag_values=f)
  flags.DEFINE_integer(
      'keep_checkpoint_max', _D.keep_checkpoint_max,
      'Checkpoints kept.',
                       lower_bound=1, flag_values=f)
  flags.DEFINE_string(
      'init_checkpoint', _D.init_checkpoint,
      'Checkpoint (file prefix or directory) to warm-start model variables '
      'from.', flag_values=f)
  flags.DEFINE_boolean(
      'overwrite_model_dir', _D.overwrite_model_dir,
      'Destructive, the last resort: when --model_dir holds a run of a '
      'different model configuration, delete that run (its checkpoints, '
      'summaries, exports) and start over (otherwise: refuse; prefer a new '
      '--model_dir). A run of the same configuration is always resumed.',
      flag_values=f)

  _define_validators(f, validate_on or f)


def _define_validators(f, validate_on):
  """Parse-time checks; each message names the flag at fault.

  Syntax of list flags here; the rules between flags are trainer/params.py's
  RULES, each registered for the flags it reads. --model and --input are
  resolved (their modules imported) once, by the entry point.
  """

  @flags.validator('mlp_hidden_units', flag_values=f,
                   message='--mlp_hidden_units must be positive integers, '
                   'e.g. 128,64.')
  def _hidden_units(units):
    return all(u.strip().isdigit() and int(u) > 0 for u in units)

  @flags.validator('lr_decay_steps', flag_values=f,
                   message='--lr_decay_steps must be increasing positive '
                   'integers, e.g. 3000,6000.')
  def _decay_steps(steps):
    if not all(s.strip().isdigit() for s in steps):
      return False
    values = [int(s) for s in steps]
    return all(a < b for a, b in zip(values, values[1:])) and all(
        s > 0 for s in values)

  @flags.validator('profile_steps', flag_values=f,
                   message='--profile_steps must be two integers N,M with '
                   '0 <= N < M, e.g. 100,110.')
  def _profile_steps(steps):
    if not steps:
      return True
    if len(steps) != 2 or not all(s.strip().isdigit() for s in steps):
      return False
    return int(steps[0]) < int(steps[1])

  @flags.validator('tf_data_service', flag_values=f)
  def _data_service_address(address):
    if address is None:
      return True
    from input_fn import data_service  # Imports TensorFlow; deferred.
    try:
      data_service.check_address(address)
    except ValueError as e:
      raise flags.ValidationError(str(e)) from e
    return True

  for flag_names, check in params_lib.RULES:
    flags.register_multi_flags_validator(
        list(flag_names), _params_rule(validate_on, check), flag_values=f)


def _params_rule(flag_values, check):
  """A multi-flag validator running params rule `check` on all the flags."""

  def validate(unused_values):
    try:
      params = params_lib.params_from_flags(flag_values, validate=False)
    except ValueError:
      return True  # A malformed list: its own validator says so.
    try:
      check(params)
    except ValueError as e:
      raise flags.ValidationError(str(e)) from e
    return True

  return validate
