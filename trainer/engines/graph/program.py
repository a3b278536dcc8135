"""What the graph engine runs, and how it calls the model_fn and input_fn.

A `Program` is one Estimator: its model_fn, params, RunConfig, warm start
and, for a TPUEstimator off TPU, its `TPUSettings`. It calls the user's
functions exactly as Estimator and TPUEstimator (use_tpu=False) do:
  * input_fn(mode, params, config) with the arguments it names, on the CPU;
    TPUEstimator requires `params` and adds params['batch_size'], the
    global batch of the mode (when given), and passes input_context;
  * model_fn(features, labels, mode, params, config) with the arguments it
    names (params and config deep copies); TPUEstimator requires `params`,
    adds params['batch_size'] (not when exporting) and params['use_tpu']
    (False but in a TPU inference export's model_fn), converts a
    TPUEstimatorSpec with as_estimator_spec() and adds its examples/sec
    hook to training_hooks. Anything but a spec raises
    ValueError('model_fn should return an EstimatorSpec.').
"""

import copy
import dataclasses
from typing import Any, Optional

import tensorflow as tf

from trainer.api import model_fns
from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.compat import tf_private
from trainer.compat import tpu_rewrite as tpu_inference
from trainer.engines.graph import added_hooks as hooks_lib



@dataclasses.dataclass(frozen=True)
class TPUSettings:
  """What a TPUEstimator adds to Estimator when it runs off TPU."""
  train_batch_size: Optional[int] = None
  eval_batch_size: Optional[int] = None
  predict_batch_size: Optional[int] = None
  log_every_n_steps: Optional[int] = None  # examples/sec hook cadence.
  log_every_n_secs: Optional[float] = None
  export_to_cpu: bool = True
  export_to_tpu: bool = True
  # export_saved_model_api_version: 1, TPUEstimator rewrites the model_fn
  # for TPU inference; 2, the model_fn does (params['use_tpu'] is True).
  export_api_version: int = 1

  def batch_size(self, mode):
    return {specs.ModeKeys.TRAIN: self.train_batch_size,
            specs.ModeKeys.EVAL: self.eval_batch_size,
            specs.ModeKeys.PREDICT: self.predict_batch_size}.get(mode)


# Estimator's ConfigProto when the RunConfig has none.
def default_session_config():
  """Estimator's ConfigProto when the RunConfig has none: soft placement,
  one meta-optimizer pass."""
  from tensorflow.core.protobuf import rewriter_config_pb2  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  options = rewriter_config_pb2.RewriterConfig(
      meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)
  return tf.compat.v1.ConfigProto(
      allow_soft_placement=True,
      graph_options=tf.compat.v1.GraphOptions(rewrite_options=options))


def _is_spec(value, fields):
  return isinstance(value, tuple) and getattr(value, '_fields', None) == fields


def is_estimator_spec(value):
  """An EstimatorSpec (ours or tensorflow_estimator's)."""
  return _is_spec(value, specs.EstimatorSpec._fields)


def is_tpu_estimator_spec(value):
  """A TPUEstimatorSpec (ours or tensorflow_estimator's)."""
  return _is_spec(value, specs.TPUEstimatorSpec._fields)


@dataclasses.dataclass
class Program:
  """One Estimator's model_fn and configuration (see module docstring)."""
  model_fn: Any
  params: dict
  config: Any  # RunConfig: model_dir, tf_random_seed, session_config, ...
  warm_start: Any = None  # WarmStartSettings or None.
  tpu: Optional[TPUSettings] = None

  @property
  def model_dir(self):
    return self.config.model_dir

  @property
  def session_config(self):
    return self.config.session_config or default_session_config()

  def user_params(self):
    return copy.deepcopy(self.params)

  def user_config(self):
    return copy.deepcopy(self.config)

  def create_global_step(self, graph):
    """global_step in `graph` (create_global_step())."""
    return create_global_step(self, graph)

  def call_input_fn(self, input_fn, mode, input_context=None):
    """input_fn's result, called as (TPU)Estimator calls it, on the CPU."""
    args = estimator_calls.fn_args(input_fn)
    kwargs = {}
    if self.tpu is not None:
      if 'params' not in args:
        raise ValueError(
            f'input_fn ({input_fn}) does not include params argument, '
            'required by TPUEstimator to pass batch size as '
            'params["batch_size"]')
      params = self.user_params()
      if self.tpu.batch_size(mode) is not None:
        params['batch_size'] = self.tpu.batch_size(mode)
      kwargs['params'] = params
      if 'input_context' in args:
        kwargs['input_context'] = input_context
    elif 'params' in args:
      kwargs['params'] = self.user_params()
    if 'mode' in args:
      kwargs['mode'] = mode
    if 'config' in args:
      kwargs['config'] = self.user_config()
    if (self.tpu is None and input_context is not None and
        'input_context' in args):
      kwargs['input_context'] = input_context
    with tf.compat.v1.device('/cpu:0'):
      return input_fn(**kwargs)

  def call_model_fn(self, features, labels, mode, export=False,
                    config=None, use_tpu=False):
    """The model_fn's EstimatorSpec (TPUEstimatorSpec converted, outside
    any TPU inference context); config: what a model_fn taking `config`
    gets (default: a copy of the RunConfig); use_tpu: a TPUEstimator's
    params['use_tpu'] (True only for a TPU inference export)."""
    args = estimator_calls.fn_args(self.model_fn)
    if 'labels' not in args and labels is not None:
      raise ValueError(
          'model_fn does not take labels, but input_fn returns labels.')
    params = self.user_params()
    if self.tpu is not None:
      if 'params' not in args:
        raise ValueError(
            f'model_fn ({self.model_fn}) does not include params argument, '
            "required by TPUEstimator to pass batch size as "
            "params['batch_size']")
      if not export and self.tpu.batch_size(mode) is not None:
        params['batch_size'] = self.tpu.batch_size(mode)
      params['use_tpu'] = use_tpu
    tf.compat.v1.logging.info('Calling model_fn.')
    spec = model_fns.call_model_fn(self.model_fn, features, labels,
                                   mode, params,
                                   config or self.user_config())
    tf.compat.v1.logging.info('Done calling model_fn.')
    if self.tpu is not None:
      if is_tpu_estimator_spec(spec):
        with tpu_inference.outside_inference_context():
          spec = specs.tpu_spec_as_estimator_spec(spec)
      spec = self._with_examples_hook(spec, mode)
    if not is_estimator_spec(spec):
      raise ValueError('model_fn should return an EstimatorSpec.')
    return spec

  def _with_examples_hook(self, spec, mode):
    """TPUEstimator adds its examples/sec hook to training_hooks."""
    tpu = self.tpu
    if not is_estimator_spec(spec) or (tpu.log_every_n_steps is None and
                                       tpu.log_every_n_secs is None):
      return spec
    hook = hooks_lib.ExamplesPerSecondHook(
        tpu.batch_size(mode),
        output_dir=self.model_dir if self.config.save_summary_steps else None,
        every_n_steps=tpu.log_every_n_steps,
        every_n_secs=tpu.log_every_n_secs)
    return spec._replace(training_hooks=tuple(spec.training_hooks) + (hook,))


def create_global_step(program, graph):
  """global_step in `graph`, as Estimator (tf.train.create_global_step) or
  TPUEstimator (a resource variable) makes it; ValueError if it exists."""
  if program.tpu is None:
    step = tf.compat.v1.train.create_global_step(graph)
  else:
    step = tpu_global_step(graph)
  if step is not tf.compat.v1.train.get_global_step(graph) or (
      not step.dtype.is_integer):
    raise ValueError(f'global_step must be an integer variable in the '
                     f'GLOBAL_STEP collection; got {step}.')
  return step


def tpu_global_step(graph):
  """TPUEstimator's global_step in `graph`: a resource variable;
  ValueError if it exists."""
  graph = graph or tf.compat.v1.get_default_graph()
  if tf.compat.v1.train.get_global_step(graph) is not None:
    raise ValueError('"global_step" already exists.')
  with graph.as_default(), graph.name_scope(None):
    return tf.compat.v1.get_variable(
        tf.compat.v1.GraphKeys.GLOBAL_STEP, shape=[], dtype=tf.int64,
        initializer=tf.compat.v1.initializers.zeros(), trainable=False,
        use_resource=True,
        collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES,
                     tf.compat.v1.GraphKeys.GLOBAL_STEP])


def device_fn(config):
  """The device function Estimator builds graphs under: RunConfig.device_fn,
  else a replica device setter over the cluster's ps tasks, else None."""
  if config.device_fn is not None:
    return config.device_fn
  if not config.num_ps_replicas:
    return None
  if config.task_type:
    worker = f'/job:{config.task_type}/task:{config.task_id}'
  else:
    worker = '/job:worker'
  return tf.compat.v1.train.replica_device_setter(
      ps_tasks=config.num_ps_replicas, worker_device=worker,
      merge_devices=True, ps_ops=tf_private.standard_ps_ops(),
      cluster=config.cluster_spec)


def new_graph(program):
  """A tf.Graph seeded with RunConfig.tf_random_seed (enter it, then call
  create_global_step)."""
  graph = tf.Graph()
  with graph.as_default():
    tf.compat.v1.random.set_random_seed(program.config.tf_random_seed)
  return graph
