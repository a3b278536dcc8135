"""Makes the facade appear wherever legacy programs look for Estimator.

On TensorFlow without Estimator (>= 2.16), install() sets
  tf.estimator, tf.compat.v2.estimator               (TF2 API: no tpu)
  tf.compat.v1.estimator (+ .tpu, .export, .experimental, .inputs)
  and `estimator` on the nested tf.compat.vN.compat.vM modules
and registers the same modules in sys.modules under those names and under
every module path of tensorflow_estimator 2.15 (its inventory,
inventory.json): tensorflow_estimator[.python.estimator[.*]], its _api and
api._v1/_v2 modules, TF 2.15's tensorflow.python.estimator[.*] and
tensorflow.python.tpu.* shims. _namespaces() says which facade module is
each path (a module of the facade itself, or the names it holds);
_SAME_MODULES which paths are the same module. stand_ins.py completes each
from the inventory (the reference's constants, submodules, re-exported
objects, and the stand-ins of what gaps.py says the facade does not
provide) and makes the paths no entry builds on first import. Idempotent;
on TF with the real Estimator it changes nothing.
"""

import functools
import importlib
import importlib.util
import logging as std_logging
import sys
import types

import tensorflow as tf

from trainer.api import estimator_names as estimator_compat
from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.compat import estimator_reexports as reexports
from trainer.compat import keras_estimator
from trainer.facade import early_stopping
from trainer.facade import estimator as estimator_lib
from trainer.facade import estimator_export
from trainer.facade import exporter
from trainer.facade import extenders
from trainer.facade import gc
from trainer.facade import keras_lib
from trainer.facade import run_config
from trainer.facade import stand_ins
from trainer.facade import training
from trainer.facade import unsupported
from trainer.facade import util as facade_util
from trainer.facade.canned import baseline
from trainer.facade.canned import dnn
from trainer.facade.canned import dnn_linear_combined
from trainer.facade.canned import head as canned_head
from trainer.facade.canned import kmeans
from trainer.facade.canned import linear
from trainer.facade.canned import metric_keys
from trainer.facade.canned import optimizers
from trainer.facade.canned import parsing_utils
from trainer.facade.canned import prediction_keys
from trainer.facade.canned import rnn
from trainer.facade.canned import sdca_ops
from trainer.facade.export import export
from trainer.facade.export import export_output
from trainer.facade.head import base_head
from trainer.facade.head import binary_class_head
from trainer.facade.head import head_utils
from trainer.facade.head import multi_class_head
from trainer.facade.head import multi_head
from trainer.facade.head import multi_label_head
from trainer.facade.head import regression_head
from trainer.facade.head import sequential_head
from trainer.facade.hooks import fake_summary_writer
from trainer.facade.hooks import hooks
from trainer.facade.hooks import in_memory_evaluator
from trainer.facade.inputs import numpy_io as inputs
from trainer.facade.inputs import pandas_io
from trainer.facade.tools import analytics
from trainer.facade.tpu import embedding as tpu_embedding_spec
from trainer.facade.tpu import iteration_count_estimator
from trainer.facade.tpu import tpu_config
from trainer.facade.tpu import tpu_embedding as tpu_embedding_v1
from trainer.facade.tpu import tpu_estimator as tpu_estimator_lib
from trainer.facade.tpu import util

# A module logger, not absl's module functions: those call basicConfig()
# before the program's app.run, and TF's log lines then print twice.
logging = std_logging.getLogger(__name__)

FACADE_MARK = estimator_compat.FACADE_MARK


_modules = {}
has_estimator = estimator_compat.has_estimator


def _module(name, names, package=False):
  """A facade module `name` holding `names`; unknown attributes say so."""
  module = types.ModuleType(name, f'trainer.legacy facade: {name}.')
  module.__dict__.update(names)
  setattr(module, FACADE_MARK, True)
  if package:
    module.__path__ = []

  def __getattr__(attr):  # pylint: disable=invalid-name
    if attr.startswith('__'):
      raise AttributeError(attr)
    if attr in unsupported.REMOVED:
      raise AttributeError(f"module '{name}' has no attribute '{attr}': "
                           f'{unsupported.REMOVED[attr]}.')
    raise AttributeError(
        f"module '{name}' has no attribute '{attr}': trainer.legacy provides "
        f'the Estimator API on TensorFlow {tf.__version__} without it (see '
        'MIGRATION.md, "Step 0").')

  module.__getattr__ = __getattr__
  return module


_HOOK_NAMES = (
    'CheckpointSaverHook', 'CheckpointSaverListener', 'FeedFnHook',
    'FinalOpsHook', 'GlobalStepWaiterHook', 'LoggingTensorHook',
    'NanLossDuringTrainingError', 'NanTensorHook', 'ProfilerHook',
    'SecondOrStepTimer', 'SessionRunArgs', 'SessionRunContext',
    'SessionRunHook', 'SessionRunValues', 'StepCounterHook', 'StopAtStepHook',
    'SummarySaverHook')
# tensorflow_estimator.python.estimator.head's modules (the facade's own).
_HEAD_MODULES = {
    'base_head': base_head, 'binary_class_head': binary_class_head,
    'head_utils': head_utils, 'multi_class_head': multi_class_head,
    'multi_head': multi_head, 'multi_label_head': multi_label_head,
    'regression_head': regression_head, 'sequential_head': sequential_head}
_HEADS = {
    'Head': base_head.Head,
    'BinaryClassHead': binary_class_head.BinaryClassHead,
    'MultiClassHead': multi_class_head.MultiClassHead,
    'MultiLabelHead': multi_label_head.MultiLabelHead,
    'RegressionHead': regression_head.RegressionHead,
    'PoissonRegressionHead': regression_head.PoissonRegressionHead,
    'LogisticRegressionHead': regression_head.LogisticRegressionHead,
    'MultiHead': multi_head.MultiHead}


# tensorflow_estimator.python.estimator.canned's modules (the facade's own).
# Published as the modules themselves, so that patching one of their names
# (as tensorflow_estimator's tests do) changes what the Estimators use.
_CANNED_MODULES = {
    'baseline': baseline, 'dnn': dnn,
    'dnn_linear_combined': dnn_linear_combined, 'linear': linear,
    'optimizers': optimizers, 'parsing_utils': parsing_utils, 'rnn': rnn,
    'linear_optimizer.python.utils.sdca_ops': sdca_ops}
_CANNED_MODULES.update(head=canned_head, metric_keys=metric_keys,
                       prediction_keys=prediction_keys)
# Canned Estimators by API name: (tf.estimator's class, tf.compat.v1's).
_CANNED = {
    f'{family}{kind}': (getattr(module, f'{family}{kind}V2'),
                        getattr(module, f'{family}{kind}'))
    for module, family in ((baseline, 'Baseline'), (dnn, 'DNN'),
                           (linear, 'Linear'),
                           (dnn_linear_combined, 'DNNLinearCombined'))
    for kind in ('Classifier', 'Estimator', 'Regressor')}


# What export_lib re-exports of TF's export utilities.
_EXPORT_UTILS = {
    'TrainOutput': reexports.TrainOutput,
    '_SupervisedOutput': reexports.SupervisedOutput,
    **{n: getattr(reexports, n) for n in (
        'EXPORT_TAG_MAP', 'SIGNATURE_KEY_MAP', 'build_all_signature_defs',
        'export_outputs_for_mode', 'get_export_outputs', 'get_temp_export_dir',
        'get_timestamped_export_dir')}}
_EXPORT_NAMES = (
    'ClassificationOutput', 'EvalOutput', 'ExportOutput', 'PredictOutput',
    'RegressionOutput', 'ServingInputReceiver', 'TensorServingInputReceiver',
    'build_parsing_serving_input_receiver_fn',
    'build_raw_serving_input_receiver_fn')


def _namespaces():
  """{module name: (names or a module, is_package)} of every facade
  module."""
  export_names = {n: getattr(export_output if n.endswith('Output') else
                             export, n) for n in _EXPORT_NAMES}
  export_module = dict(export_names, **{n: getattr(export, n) for n in (
      'SupervisedInputReceiver', 'UnsupervisedInputReceiver',
      'build_raw_supervised_input_receiver_fn',
      'build_supervised_input_receiver_fn_from_input_fn',
      'wrap_and_check_input_tensors')})
  input_names = {'numpy_input_fn': inputs.numpy_input_fn,
                 'pandas_input_fn': pandas_io.pandas_input_fn}
  tpu = {'TPUEstimator': tpu_estimator_lib.TPUEstimator,
         'TPUEstimatorSpec': specs.TPUEstimatorSpec,
         'RunConfig': tpu_config.TPURunConfig,
         'TPUConfig': tpu_config.TPUConfig,
         'InputPipelineConfig': tpu_config.InputPipelineConfig}
  v2 = {
      'Estimator': estimator_lib.EstimatorV2,
      'EstimatorSpec': specs.EstimatorSpec, 'ModeKeys': specs.ModeKeys,
      'RunConfig': run_config.RunConfig, 'TrainSpec': training.TrainSpec,
      'EvalSpec': training.EvalSpec,
      'train_and_evaluate': training.train_and_evaluate,
      'WarmStartSettings': estimator_lib.WarmStartSettings,
      'VocabInfo': estimator_lib.VocabInfo, 'Exporter': exporter.Exporter,
      'BestExporter': exporter.BestExporter,
      'add_metrics': extenders.add_metrics,
      'FinalExporter': exporter.FinalExporter,
      'LatestExporter': exporter.LatestExporter,
      **{n: getattr(hooks, n) for n in _HOOK_NAMES},
      **_HEADS,
      **{name: classes[0] for name, classes in _CANNED.items()},
      'classifier_parse_example_spec':
          parsing_utils.classifier_parse_example_spec_v2,
      'regressor_parse_example_spec':
          parsing_utils.regressor_parse_example_spec_v2}
  v1 = dict(
      v2, Estimator=estimator_lib.Estimator,
      **{name: classes[1] for name, classes in _CANNED.items()},
      classifier_parse_example_spec=(
          parsing_utils.classifier_parse_example_spec),
      regressor_parse_example_spec=parsing_utils.regressor_parse_example_spec)
  experimental = {
      'LinearSDCA': linear.LinearSDCA,
      'call_logit_fn': estimator_calls.call_logit_fn,
      'InMemoryEvaluatorHook': in_memory_evaluator.InMemoryEvaluatorHook,
      'build_raw_supervised_input_receiver_fn':
          export.build_raw_supervised_input_receiver_fn,
      **{n: getattr(early_stopping, n) for n in (
          'make_early_stopping_hook', 'make_stop_at_checkpoint_step_hook',
          'stop_if_higher_hook',
          'stop_if_lower_hook', 'stop_if_no_decrease_hook',
          'stop_if_no_increase_hook')}}
  experimental_v1 = dict(
      experimental, dnn_logit_fn_builder=dnn.dnn_logit_fn_builder,
      linear_logit_fn_builder=linear.linear_logit_fn_builder)
  experimental.update(RNNClassifier=rnn.RNNClassifier,
                      RNNEstimator=rnn.RNNEstimator)
  stop_at_checkpoint = {
      'make_stop_at_checkpoint_step_hook':
          early_stopping.make_stop_at_checkpoint_step_hook,
      '_StopAtCheckpointStepHook': early_stopping._StopAtCheckpointStepHook,  # pylint: disable=protected-access
      'InMemoryEvaluatorHook': in_memory_evaluator.InMemoryEvaluatorHook}
  private = {
      '': ({}, True),
      '.canned': ({}, True),
      **{f'.canned.{name}': (module, False)
         for name, module in _CANNED_MODULES.items()},
      '.canned.linear_optimizer': ({}, True),
      '.canned.linear_optimizer.python': ({}, True),
      '.canned.linear_optimizer.python.utils': ({}, True),
      # The reference ships only test utilities there (dnn_testing_utils_v1).
      '.canned.v1': ({}, True),
      '.head': ({}, True),
      **{f'.head.{name}': (module, False)
         for name, module in _HEAD_MODULES.items()},
      '.estimator': (estimator_lib, False),
      '.estimator_lib': (dict(v1), False),
      '.estimator_export': (estimator_export, False),
      '.model_fn': ({'EstimatorSpec': specs.EstimatorSpec,
                     'ModeKeys': specs.ModeKeys,
                     'verify_model_fn_args':
                         estimator_lib.verify_model_fn_args,
                     'call_logit_fn': estimator_calls.call_logit_fn,
                     # What heads' _create_tpu_estimator_spec returns.
                     '_TPUEstimatorSpec': specs.TPUEstimatorSpec,
                     'LOSS_METRIC_KEY': specs.LOSS_METRIC_KEY,
                     'AVERAGE_LOSS_METRIC_KEY': 'average_loss'}, False),
      '.inputs': (input_names, True),
      '.inputs.inputs': (input_names, False),
      '.inputs.numpy_io': (inputs, False),
      '.inputs.pandas_io': (pandas_io, False),
      '.tools': ({}, True),
      '.tools.analytics': (analytics, False),
      '.mode_keys': ({'ModeKeys': specs.ModeKeys}, False),
      '.gc': (gc, False),
      '.util': (facade_util, False),
      '.run_config': (run_config, False),
      '.training': (training, False),
      '.extenders': (extenders, False),
      '.early_stopping': (early_stopping, False),
      '.hooks': (dict(stop_at_checkpoint), True),
      '.hooks.hooks': (dict(stop_at_checkpoint), False),
      '.hooks.basic_session_run_hooks': (
          {n: getattr(hooks, n) for n in _HOOK_NAMES
           if not n.startswith('SessionRun')}, False),
      '.hooks.session_run_hook': (
          {n: getattr(hooks, n) for n in _HOOK_NAMES
           if n.startswith('SessionRun')}, False),
      '.hooks.fake_summary_writer': (
          {'FakeSummaryWriter': fake_summary_writer.FakeSummaryWriter}, False),
      '.exporter': (exporter, False),
      '.export': (export_names, True),
      '.export.export': (export, False),
      '.export.export_lib': (dict(export_module, **_EXPORT_UTILS), False),
      '.export.export_output': ({n: export_names[n] for n in _EXPORT_NAMES
                                 if n.endswith('Output')} | {
                                     'TrainOutput': reexports.TrainOutput,
                                     '_SupervisedOutput':
                                         reexports.SupervisedOutput}, False),
      '.tpu': (tpu, True),
      '.tpu.tpu_estimator': (tpu_estimator_lib, False),
      '.tpu.tpu_config': (tpu_config, False),
      '.tpu.util': (util, False),
      '.tpu.iteration_count_estimator': (iteration_count_estimator, False),
  }
  found = {
      'tensorflow.estimator': (dict(v2), True),
      'tensorflow.estimator.export': (export_names, True),
      'tensorflow.estimator.experimental': (experimental, True),
      'tensorflow.compat.v1.estimator': (v1, True),
      'tensorflow.compat.v1.estimator.export': (export_names, True),
      'tensorflow.compat.v1.estimator.experimental': (experimental_v1,
                                                      True),
      'tensorflow.compat.v1.estimator.inputs': (input_names, True),
      # Importable, but no attribute of tf.estimator (as on TF 2.15).
      'tensorflow.estimator.inputs': ({}, True),
      'tensorflow.compat.v1.estimator.tpu': (tpu, True),
      'tensorflow.compat.v1.estimator.tpu.experimental': ({}, True),
      'tensorflow_estimator': ({}, True),
      'tensorflow_estimator.python': ({}, True),
  }
  private.update(_surface_modules())
  for base in ('tensorflow.python.estimator',
               'tensorflow_estimator.python.estimator'):
    for suffix, entry in private.items():
      found[base + suffix] = entry
  return found


# -- Issue 42 (the whole tf.estimator surface): modules and names added to
# the tables above, kept apart from them so that each merges on its own.
_PRIVATE_BASES = ('tensorflow.python.estimator',
                  'tensorflow_estimator.python.estimator')


def _surface_modules():
  """{suffix under tensorflow_estimator.python.estimator: entry} of the
  modules issue 42 adds."""
  return {
      # tf.keras.estimator.model_to_estimator (tf-keras's) imports it.
      '.keras_lib': (keras_lib, False),
      # Its names, not the module: its module-valued names (export_output)
      # are then the facade's modules at the reference's paths.
      '.canned.kmeans': ({n: v for n, v in vars(kmeans).items()
                          if not n.startswith('__') and
                          not isinstance(v, types.ModuleType)}, False),
      '.tpu._tpu_estimator_embedding': (_tpu_embedding_names(), False),
  }


def _tpu_embedding_names():
  """tensorflow_estimator's tpu/_tpu_estimator_embedding's public names."""
  return {'EmbeddingConfigSpec': tpu_embedding_spec.EmbeddingConfigSpec,
          'get_configs_from_feature_columns':
              tpu_embedding_spec.configs_from_feature_columns,
          **{cls.__name__: cls
             for cls in tpu_embedding_v1.SUPPORTED_OPTIMIZERS}}


def _surface_names():
  """{module name: {name: value}}: names issue 42 adds to modules the
  table above makes (a private one under both of its bases)."""
  private = {
      '.estimator': {
          'maybe_overwrite_model_dir_and_session_config':
              estimator_lib.maybe_overwrite_model_dir_and_session_config},
      '.run_config': {
          'get_default_session_config':
              run_config.get_default_session_config},
  }
  public = {
      # v1 only, as in tensorflow_estimator.
      'tensorflow.compat.v1.estimator.experimental': {
          'KMeans': kmeans.KMeansClustering},
      'tensorflow.compat.v1.estimator.tpu.experimental': {
          'EmbeddingConfigSpec': tpu_embedding_spec.EmbeddingConfigSpec},
  }
  # tpu_estimator re-exports the embedding spec and table optimizers.
  private['.tpu.tpu_estimator'] = {
      n: v for n, v in _tpu_embedding_names().items()
      if n in ('EmbeddingConfigSpec', 'AdagradParameters', 'AdamParameters',
               'StochasticGradientDescentParameters')}
  names = {**public, **{base + suffix: names for suffix, names in
                        private.items() for base in _PRIVATE_BASES}}
  names['tensorflow.python.tpu.tpu_estimator'] = private['.tpu.tpu_estimator']
  return names


def _publish_tpu_embedding():
  """TF 1's TPU embedding configuration where TensorFlow (>= 2.16) removed
  it with Estimator: tf.compat.v1.tpu.experimental's table optimizers and
  the module tensorflow.python.tpu.tpu_embedding (FeatureConfig,
  TableConfig, ...), which EmbeddingConfigSpec programs use."""
  experimental = tf.compat.v1.tpu.experimental
  for name, cls in tpu_embedding_v1.PUBLIC_V1.items():
    if not hasattr(experimental, name):
      setattr(experimental, name, cls)
  if not _exists('tensorflow.python.tpu.tpu_embedding'):
    sys.modules.setdefault('tensorflow.python.tpu.tpu_embedding',
                           tpu_embedding_v1)


def _publish_keras_estimator():
  """tf.keras.estimator and tf.compat.v1.keras.estimator where tf.keras is
  Keras 3, which has none: tf-keras's (their model_to_estimator calls this
  facade's keras_lib, and takes tf-keras models), when it is installed."""
  for api, module in keras_estimator.tf_keras_estimator_modules().items():
    if not hasattr(api.keras, 'estimator'):
      api.keras.estimator = module


def _exists(name):
  try:
    return importlib.util.find_spec(name) is not None
  except (ImportError, ValueError):
    return False


# Module paths that are the same facade module as another: TF 2.15's shims
# re-export tensorflow_estimator's modules; tensorflow_estimator's API
# modules hold tf.estimator's and tf.compat.v1.estimator's names. By prefix
# (the path itself and every module under it): {alias: facade module}.
_SAME_MODULES = {
    'tensorflow.python.estimator.': 'tensorflow_estimator.python.estimator.',
    'tensorflow.python.tpu.tpu_estimator':
        'tensorflow_estimator.python.estimator.tpu.tpu_estimator',
    'tensorflow.python.tpu.tpu_config':
        'tensorflow_estimator.python.estimator.tpu.tpu_config',
    'tensorflow_estimator.python.estimator.api._v1.estimator':
        'tensorflow.compat.v1.estimator',
    'tensorflow_estimator.python.estimator.api._v2.estimator':
        'tensorflow.estimator',
    'tensorflow_estimator._api.v1.estimator': 'tensorflow.compat.v1.estimator',
    'tensorflow_estimator._api.v2.estimator': 'tensorflow.estimator',
    'tensorflow.compat.v2.estimator': 'tensorflow.estimator',
    'tensorflow.compat.v1.compat.v1.estimator':
        'tensorflow.compat.v1.estimator',
    'tensorflow.compat.v2.compat.v1.estimator':
        'tensorflow.compat.v1.estimator',
    'tensorflow.compat.v1.compat.v2.estimator': 'tensorflow.estimator',
    'tensorflow.compat.v2.compat.v2.estimator': 'tensorflow.estimator',
}
# Modules no parent has as an attribute (imported by path only).
_UNLINKED = ('tensorflow.estimator.inputs',)
# Where TF publishes the Estimator API as attributes: {module path of the
# attribute's owner: facade module}, the nested compat modules included.
_API_ATTRIBUTES = {
    'tensorflow': 'tensorflow.estimator',
    'tensorflow.compat.v1': 'tensorflow.compat.v1.estimator',
    'tensorflow.compat.v2': 'tensorflow.estimator',
    'tensorflow.compat.v1.compat.v1': 'tensorflow.compat.v1.estimator',
    'tensorflow.compat.v1.compat.v2': 'tensorflow.estimator',
    'tensorflow.compat.v2.compat.v1': 'tensorflow.compat.v1.estimator',
    'tensorflow.compat.v2.compat.v2': 'tensorflow.estimator',
}


def _same_module(name):
  """The facade module path `name` is an alias of, else None."""
  for alias, target in _SAME_MODULES.items():
    if alias.endswith('.') and name.startswith(alias):
      return target + name[len(alias):]
    if name == alias or name.startswith(alias + '.'):
      return target + name[len(alias):]
  return None


def _build():
  """Creates every facade module (one given as a module is that module) and
  its aliases, links each to its parent's attribute, and completes those at
  the reference's paths from the inventory (stand_ins.py)."""
  namespaces = _namespaces()
  for name, (names, package) in namespaces.items():
    if _same_module(name) in namespaces:
      continue  # The same module as its target (below).
    if isinstance(names, types.ModuleType):
      _modules[name] = names
    else:
      _modules[name] = _module(name, names, package)
  for name, names in _surface_names().items():
    if name in _modules:  # (TF's own tensorflow.python.tpu modules stay.)
      _modules[name].__dict__.update(names)
  for name in list(_modules):
    for alias in _aliases_of(name):
      if alias.startswith('tensorflow.python.tpu.') and _exists(alias):
        continue  # This TF still has the module (shim): leave it alone.
      _modules.setdefault(alias, _modules[name])
  unlinked = {id(_modules[name]) for name in _UNLINKED}
  for name, module in _modules.items():
    parent, _, child = name.rpartition('.')
    if parent in _modules and id(module) not in unlinked:
      setattr(_modules[parent], child, module)
  # tensorflow_estimator's own top-level `estimator` is the TF1 API.
  _modules['tensorflow_estimator'].estimator = _modules[
      'tensorflow.compat.v1.estimator']
  for name, module in _modules.items():
    if stand_ins.is_reference(name):
      stand_ins.complete(module, name)


def _aliases_of(name):
  """The module paths that are facade module `name` too (_SAME_MODULES)."""
  found = []
  for alias, target in _SAME_MODULES.items():
    if alias.endswith('.'):
      if name.startswith(target):
        found.append(alias + name[len(target):])
    elif name == target or name.startswith(target + '.'):
      found.append(alias + name[len(target):])
  return found


def install():
  """Installs the facade where Estimator is missing; True if this call did.

  False where the real Estimator exists or the facade is already in place.
  Call it before the program or model code first looks up tf.estimator.
  """
  # tf.compat.v1 is loaded lazily: a later import (tf-keras does one) would
  # replace an unloaded placeholder, and with it the names set here.
  importlib.import_module('tensorflow.compat.v1')
  if has_estimator():
    return False
  if _modules:
    return False
  _build()
  for name, module in _modules.items():
    sys.modules.setdefault(name, module)
  stand_ins.install_finder(
      lambda name, package: _module(name, {}, package), _same_module)
  for owner, module in _API_ATTRIBUTES.items():
    parent = functools.reduce(getattr, owner.split('.')[1:], tf)
    setattr(parent, 'estimator', _modules[module])
    # So that importing a path under it finds these modules, and does not
    # load TF's API modules anew (without estimator) over them.
    for depth in range(2, owner.count('.') + 1):
      path = '.'.join(owner.split('.')[:depth + 1])
      sys.modules.setdefault(path, functools.reduce(
          getattr, path.split('.')[1:], tf))
  _publish_keras_estimator()
  _publish_tpu_embedding()
  logging.info('TensorFlow %s has no tf.estimator: installed the '
               'trainer.legacy facade (the Estimator API: on one device on '
               'the graph engine, under a multi-replica or TPU strategy or '
               'across TF_CONFIG workers on the tf2 runner).',
               tf.__version__)
  return True


def installed():
  """Whether install() has put the facade in place in this process."""
  return bool(_modules)
