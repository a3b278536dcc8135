"""What trainer.migrate learns about a model_fn, and what it writes from it.

One `ModelFacts` per migration: trace.py fills it from the model_fn built
once per mode in a TF1 graph (as Estimator builds it), codegen.py writes the
generated program from it, convert.py maps the checkpoint with it, and
report.json lists it. Plain data: every field is JSON-able (`as_json`).
"""

import dataclasses
from typing import Dict, List, Optional

# tf.compat.v1.train optimizers the generated program replaces by a
# tf-keras optimizer with TF1's update rule (templates/optimizers.py.tmpl):
# {v1 class: (generated class, {TF2 argument: v1 attribute})}. The learning
# rate attribute is listed first; it is read per step (it may be a tensor of
# global_step, which the model_fn computes).
CONVERTED_OPTIMIZERS = {
    'GradientDescentOptimizer': ('V1GradientDescent',
                                 {'learning_rate': '_learning_rate'}),
    'MomentumOptimizer': ('V1Momentum', {
        'learning_rate': '_learning_rate', 'momentum': '_momentum',
        'use_nesterov': '_use_nesterov'}),
    'AdamOptimizer': ('V1Adam', {
        'learning_rate': '_lr', 'beta_1': '_beta1', 'beta_2': '_beta2',
        'epsilon': '_epsilon'}),
    'RMSPropOptimizer': ('V1RMSProp', {
        'learning_rate': '_learning_rate', 'decay': '_decay',
        'momentum': '_momentum', 'epsilon': '_epsilon',
        'centered': '_centered'}),
    'AdagradOptimizer': ('V1Adagrad', {
        'learning_rate': '_learning_rate',
        'initial_accumulator_value': '_initial_accumulator_value'}),
}

# tf.compat.v1.metrics the generated program replaces by tf-keras metrics
# (the generated bridge updates them): {v1 name: Keras constructor text}.
# Same definitions as TF1's (accuracy, mean) or written to be: the v1 error
# metrics average over every element, tf_keras' per example first.
CONVERTED_METRICS = {
    'accuracy': 'tf_keras.metrics.Accuracy',
    'mean': 'tf_keras.metrics.Mean',
    'mean_squared_error': 'tf_keras.metrics.Mean',
    'mean_absolute_error': 'tf_keras.metrics.Mean',
    'root_mean_squared_error': 'tf1_bridge.RootMeanSquaredError',
    'precision': 'tf_keras.metrics.Precision',
    'recall': 'tf_keras.metrics.Recall',
    'auc': 'tf_keras.metrics.AUC',
    'recall_at_k': 'tf_keras.metrics.Mean',
}


@dataclasses.dataclass
class Construct:
  """A TF1 construct of the model_fn and what the generated program does
  with it: kind is 'wrapped' (runs as it is, inside the tf1_bridge
  ModelFn), 'converted' (a TF2 object now) or 'unconverted' (not carried
  over: the program differs there; `todo` says what to do)."""
  kind: str
  construct: str
  where: str
  todo: str = ''


@dataclasses.dataclass
class OptimizerFacts:
  v1_class: str  # tf.compat.v1.train class name, e.g. MomentumOptimizer.
  keras_class: str  # The generated class, e.g. V1Momentum.
  name: str  # The v1 optimizer's name (its slots' suffix).
  hyperparameters: Dict[str, object]  # TF2 argument -> value (no lr).
  learning_rate_attribute: str
  learning_rate: Optional[float]  # When constant; else None (a tensor).
  cross_shard: bool  # Wrapped in CrossShardOptimizer.
  steps_global_step: bool  # apply_gradients(..., global_step=...).
  # {variable TF1 name: {v1 slot name: checkpoint name}}.
  slots: Dict[str, Dict[str, str]]
  non_slots: Dict[str, str]  # {attribute: checkpoint name} (beta1_power).


@dataclasses.dataclass
class EmaFacts:
  decay: float
  num_updates: Optional[str]  # 'global_step' or None.
  zero_debias: bool
  variables: List[str]  # TF1 names averaged.
  shadows: Dict[str, str]  # {variable: its average's checkpoint name}.
  evaluate_with_averages: bool  # EVAL's scaffold restores the averages.
  rule: str  # 'trainable', 'trainable+moving', or 'listed'.


@dataclasses.dataclass
class MetricFacts:
  v1_name: str  # tf.compat.v1.metrics.<v1_name>.
  key: Optional[str]  # Its key in the metric dict, if returned as is.
  keras: str  # Constructor expression, or '' when not converted.
  arguments: Dict[str, object]  # Constructor keyword arguments.


@dataclasses.dataclass
class SignatureFacts:
  name: str
  outputs: List[str]
  output_class: str  # PredictOutput, ClassificationOutput, ...


@dataclasses.dataclass
class ReceiverInput:
  key: str
  dtype: str
  shape: List[Optional[int]]
  placeholder_index: int  # Creation order in the serving input fn.


@dataclasses.dataclass
class VariableFacts:
  name: str
  shape: List[int]
  dtype: str
  trainable: bool
  role: str  # 'model', 'global_step', 'slot', 'optimizer', 'ema'.


@dataclasses.dataclass
class ModelFacts:
  """Everything codegen, convert and compare need."""
  model_spec: str
  input_spec: str
  serving_spec: Optional[str]
  params: Dict[str, object]
  team_flags: Dict[str, object]
  takes_labels: bool
  labels_present: bool
  precision: str  # 'float32' or 'bfloat16' (any bfloat16 op in TRAIN).
  variables: List[VariableFacts]
  optimizer: Optional[OptimizerFacts]
  ema: Optional[EmaFacts]
  host_call: bool
  v1_summaries: int
  metrics: List[MetricFacts]
  metric_keys: List[str]
  eval_metrics_kind: str  # 'eval_metrics', 'eval_metric_ops' or 'none'.
  predictions: Optional[List[str]]  # Keys; None for a single tensor.
  signatures: List[SignatureFacts]
  receiver: List[ReceiverInput]
  receiver_kind: str  # 'serving_input_fn' or 'raw' (the features).
  modes: List[str]  # The modes the model_fn builds.
  estimator_paths: List[str]
  constructs: List[Construct]
  checkpoint: str = ''
  step: int = 0
  vendored: bool = False  # A built-in model: its code is in OUT/vendor/.
  learning_rates: List[List[float]] = dataclasses.field(default_factory=list)

  def as_json(self):
    return dataclasses.asdict(self)

  @property
  def model_variables(self):
    return [v for v in self.variables if v.role in ('model', 'global_step')]

  def of_kind(self, kind):
    return [c for c in self.constructs if c.kind == kind]


_NESTED = {'variables': VariableFacts, 'metrics': MetricFacts,
           'signatures': SignatureFacts, 'receiver': ReceiverInput,
           'constructs': Construct}


def from_json(data):
  """The ModelFacts of `as_json()`'s output (report.json's 'facts')."""
  data = dict(data)
  for key, cls in _NESTED.items():
    data[key] = [cls(**item) for item in data.get(key) or []]
  if data.get('optimizer'):
    data['optimizer'] = OptimizerFacts(**data['optimizer'])
  if data.get('ema'):
    data['ema'] = EmaFacts(**data['ema'])
  return ModelFacts(**data)
