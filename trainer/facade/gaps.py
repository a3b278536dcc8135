"""The names of tensorflow_estimator 2.15 the facade does not provide, each
with why and what to use instead: the explicit table behind the stand-ins
(stand_ins.py) and MIGRATION.md's "Not provided" table.

Each Gap covers `names`: 'module:name' patterns (fnmatch) over the
reference's own module paths (tensorflow_estimator.python.estimator.*; TF
2.15's shims of a module, tensorflow.python.estimator.* and
tensorflow.python.tpu.*, are covered by their module's entries). A pattern
'module:*' covers a whole module, only allowed where the facade provides no
class or function (tests/facade/inventory_test.py checks that every name the
facade lacks is covered by exactly one gap, and every pattern covers one).
"""

import dataclasses
import fnmatch
import importlib.util
from typing import Optional, Tuple

_E = 'tensorflow_estimator.python.estimator'


@dataclasses.dataclass(frozen=True)
class Gap:
  title: str  # What the names are, in a few words (MIGRATION.md's rows).
  why: str
  instead: str
  names: Tuple[str, ...]
  issue: Optional[int] = None  # The issue that will provide them.


def _names(module, names):
  """'module:name' patterns of the space-separated `names` of `module`
  (relative to tensorflow_estimator.python.estimator)."""
  return tuple(f'{_E}.{module}:{name}' for name in names.split())


def _members(module, cls, members):
  """'module:Class.member' patterns of the space-separated `members`."""
  return tuple(f'{_E}.{module}:{cls}.{m}' for m in members.split())


def _modules(*modules):
  """'module:*' patterns: every name of each module (and its submodules')."""
  return tuple(p for m in modules for p in (f'{_E}.{m}:*', f'{_E}.{m}.*:*'))


GAPS = (
    Gap("TPU embedding's internals",
        "the helpers of TPUEstimator's TPU-embedding engine (its feature "
        'splitting, variable naming and column tables), which run only on '
        'a TPU, where the facade refuses embedding_config_spec; off TPU the '
        'embedding columns look up ordinary variables as under TF 2.15',
        'EmbeddingConfigSpec with use_tpu=False, or '
        'tf.tpu.experimental.embedding.TPUEmbedding under TPUStrategy',
        _names('tpu._tpu_estimator_embedding',
               'EmbeddingConfig _EMBEDDING_COLUMN_CLASSES '
               '_SUPPORTED_FEATURE_COLUMNS _SUPPORTED_OPTIMIZERS '
               '_TPU_DEVICE_SPECIFIC_EMBEDDING_COLUMNS '
               '_TPU_EMBEDDING_COLUMN_CLASSES '
               '_get_embedding_var_name_from_table_name '
               '_get_embedding_variable_name _get_slot_variable_names '
               '_get_sparse_feature_from_feature '
               '_get_table_name_from_embedding_var_name '
               '_get_weights_from_features _maybe_dense_to_sparse '
               '_split_tensor get_full_variable_names '
               'get_tpu_embedding_columns split_inputs')),
    Gap("TPUEstimator's TPU machinery",
        "TPUEstimator's own TPU machinery (infeed and outfeed queues and "
        'hooks, the model_fn wrapper, TPU contexts, its error rendezvous, '
        'signal and loop helpers): on a TPU the facade runs the model_fn '
        "under tf.distribute's TPUStrategy instead",
        'use TPUEstimator itself (params["batch_size"], params["context"] '
        'in input_fn, TPUEstimatorSpec, host_call); for the mechanics, '
        'tf.distribute.TPUStrategy',
        _modules('tpu.tpu_context', 'tpu.error_handling') + _names(
            'tpu.tpu_estimator',
            'CatchInvalidHostcallFunctions InstallSignalHandlerHook '
            'PeriodicLogger TPUInfeedOutfeedSessionHook '
            'TPUInfeedOutfeedSessionHookForPrediction TensorPacker '
            '_CapturedObject _CapturingContext _InputPipeline _Inputs '
            '_InputsWithStoppingSignals _ModelFnWrapper _NotSaver '
            '_OpQueueContext _OpSignalOnceQueueContext _OutfeedHostCall '
            '_OutfeedHostCallHook _PaddingSignals _SIGNAL '
            '_SetEvalIterationsHook _StopSignals _StoppingPredictHook '
            '_TPUStopAtStepHook _build_computation_for_inference '
            '_build_tpu_computation_for_inference _check_add_preemption_hook '
            '_clone_export_output_with_tensors '
            '_create_or_get_iterations_per_loop _eval_on_tpu_system '
            '_export_output_to_tensors _get_scaffold _increase_eval_step_op '
            '_predict_on_tpu_system _sync_variables_ops '
            '_train_on_tpu_system _validate_tpu_training_graph '
            '_verify_cross_hosts_transfer_size _wrap_computation_in_while_loop '
            '_wrap_computation_in_while_loop_with_stopping_signals '
            'call_computation export_estimator_savedmodel '
            'generate_broadcast_enqueue_ops_fn '
            'generate_per_core_enqueue_ops_fn_for_host '
            'generate_per_host_enqueue_ops_fn_for_host '
            'generate_per_host_v2_enqueue_ops_fn_for_host')),
    Gap('time-series Estimators',
        'the time-series Estimators (ARRegressor, LSTMAutoRegressor, '
        'TimeSeriesRegressor, their models, heads and state management), '
        'which the facade does not reimplement',
        'model the series with tf.keras (an LSTM or Conv1D model) or '
        "TensorFlow Probability's tfp.sts",
        _modules('canned.timeseries')),
    Gap('SavedModelEstimator',
        'SavedModelEstimator serves the graphs of an exported SavedModel as '
        'an Estimator, which the facade does not reimplement',
        'load the SavedModel with tf.saved_model.load and call its '
        'signatures, or keep training the Estimator that exported it',
        _modules('canned.saved_model_estimator')),
    Gap("the reference's test utilities",
        "tensorflow_estimator's own tests' base classes and helpers (its "
        'wheel ships them; they test the reference\'s canned Estimators, '
        'not an API)',
        'copy canned/dnn_testing_utils.py, linear_testing_utils.py or '
        'canned/v1/*_v1.py from tensorflow/estimator v2.15.0 (Apache-2.0) '
        'beside your tests',
        _modules('canned.dnn_testing_utils', 'canned.linear_testing_utils',
                 'canned.v1.dnn_testing_utils_v1',
                 'canned.v1.linear_testing_utils_v1')),
    Gap('queue-runner feeding',
        'the queue-runner feeding of numpy and pandas data: the facade\'s '
        'numpy_input_fn and pandas_input_fn feed through tf.data',
        'tf.compat.v1.estimator.inputs.numpy_input_fn or pandas_input_fn, '
        'or tf.data.Dataset.from_tensor_slices',
        _modules('inputs.queues.feeding_functions',
                 'inputs.queues.feeding_queue_runner')),
    Gap('export.function',
        'the tf.function wrapping of a model_fn (ModelFunction) the '
        'reference keeps as an experiment; Estimator itself never uses it',
        'export with Estimator.export_saved_model, or write the model as a '
        'tf.Module',
        _modules('export.function')),
    Gap('checkpoint_converter',
        "converts a canned Estimator's checkpoint from v1 to v2 optimizer "
        'variable names, a one-off tool the facade does not ship',
        "run tensorflow_estimator 2.15's tools/checkpoint_converter.py on "
        'TF 2.15, or train the v2 canned Estimator from scratch',
        _modules('tools.checkpoint_converter')),
    Gap("the reference's SDCA internals",
        "internals of the reference's SDCA trainer: the facade's LinearSDCA "
        'trains with its own (canned/sdca_ops.py; the same variables, '
        'tables and checkpoints)',
        'tf.estimator.experimental.LinearSDCA with LinearClassifier or '
        'LinearRegressor',
        _modules('canned.linear_optimizer.python.utils.'
                 'sharded_mutable_dense_hashtable') + _names(
            'canned.linear_optimizer.python.utils.sdca_ops',
            '_SDCAModel _SparseFeatureColumn')
        + _members('canned.linear', 'LinearSDCA',
                   '_prune_and_unique_sparse_ids')),
    Gap('canned model_fn helpers',
        "private helpers of the reference's canned model_fns: the facade "
        'builds the canned models its own way (trainer/facade/canned: the '
        'same variables, checkpoints, losses and metrics)',
        'the canned Estimators, or dnn_logit_fn_builder, '
        'linear_logit_fn_builder and the heads in your own model_fn',
        _names('canned.dnn', '_add_hidden_layer_summary '
               '_get_dnn_estimator_spec _get_previous_name_scope '
               '_name_from_scope_name') +
        _names('canned.dnn_linear_combined',
               '_init_dnn_linear_combined_estimator') +
        _members('canned.dnn', '_DNNModel', '_add_layer')),
    Gap("heads' private methods",
        "private methods of the reference's heads (its lookup tables, "
        'metric updates and export merging): the facade\'s heads compute '
        'the same their own way',
        'override the public Head methods (create_estimator_spec, loss, '
        'predictions, metrics, update_metrics)',
        _members('head.binary_class_head', 'BinaryClassHead',
                 '_cached_class_id_table _cached_class_string_table '
                 '_class_id_table _class_string_table '
                 '_update_accuracy_baseline _update_auc') +
        _members('head.multi_class_head', 'MultiClassHead',
                 '_cached_class_id_table _cached_class_string_table '
                 '_class_id_table _class_string_table') +
        _members('head.multi_label_head', 'MultiLabelHead',
                 '_cached_class_id_table _class_id_table') +
        _members('head.multi_head', 'MultiHead',
                 '_merge_predict_export_outputs')),
    Gap("RunConfig's internals",
        "RunConfig's TF_CONFIG and distribution internals: the facade's "
        'RunConfig parses TF_CONFIG itself, with the same properties and '
        'errors',
        "RunConfig's properties (cluster_spec, task_type, task_id, master, "
        'is_chief, num_ps_replicas, ...) and replace()',
        _names('run_config', '_count_ps _count_worker _get_eval_session_master '
               '_get_global_id_in_cluster _get_model_dir _get_session_master '
               '_validate_properties _validate_save_ckpt_with_replaced_keys '
               '_validate_service _validate_task_type_and_task_id') +
        _members('run_config', 'RunConfig',
                 '_get_default_session_config_distributed '
                 '_init_distributed_setting_from_environment_var '
                 '_init_distributed_setting_from_environment_var_with_master '
                 '_maybe_overwrite_session_config_for_distributed_training '
                 '_replace _verify_strategy_compatibility') +
        _members('tpu.tpu_config', 'RunConfig',
                 '_maybe_overwrite_session_config_for_distributed_training')),
    Gap("EstimatorSpec's validators",
        "EstimatorSpec's private validators: the facade's EstimatorSpec "
        'validates when it is made, with the same errors',
        'construct tf.estimator.EstimatorSpec (or TPUEstimatorSpec)',
        _names('model_fn', '_check_is_tensor _check_is_tensor_or_operation '
               '_update_variable_collection '
               '_validate_estimator_spec_export_outputs '
               '_validate_estimator_spec_hooks _validate_estimator_spec_loss '
               '_validate_estimator_spec_predictions '
               '_validate_estimator_spec_train_op _validate_eval_metric_ops '
               '_validate_scaffold')),
    Gap("train_and_evaluate's executor",
        "train_and_evaluate's executor and its listeners: the facade runs "
        'train_and_evaluate its own way (trainer/facade/training.py), task '
        'by task as the reference',
        'tf.estimator.train_and_evaluate with TrainSpec and EvalSpec',
        _names('training', '_ContinuousEvalListener _EvalResult '
               '_NewCheckpointListenerForEvaluate _StopAtSecsHook '
               '_TrainingExecutor')),
    Gap('early-stopping internals',
        'internals of the early-stopping hooks (their multi-worker variant '
        'and event reading): the facade\'s hooks stop workers through the '
        'checkpointed stop variable and read events with read_eval_metrics',
        'tf.estimator.experimental.make_early_stopping_hook and the stop_if_* '
        'hooks; early_stopping.read_eval_metrics',
        _names('early_stopping', '_MultiWorkerEarlyStoppingHook _summaries')),
    Gap('_SavedModelExporter',
        'the base class of the reference\'s LatestExporter and '
        "FinalExporter; the facade's exporters derive from "
        'tf.estimator.Exporter',
        'subclass tf.estimator.Exporter, or use FinalExporter, '
        'LatestExporter or BestExporter',
        _names('exporter', '_SavedModelExporter')),
)


def _has_pandas():
  return importlib.util.find_spec('pandas') is not None


# Constants whose value is this environment's, not TF 2.15's lane's:
# {'module:name' pattern: (what it says, its value here)}.
ENVIRONMENT_VALUES = {
    f'{_E}.*:HAS_PANDAS': ('whether pandas is installed', _has_pandas),
}


def environment_value(data, path, name):
  """(what it says, value getter) if reference name `path`.`name` is one of
  ENVIRONMENT_VALUES, else None."""
  key = f'{canonical(data, path)}:{name}'
  for pattern, entry in ENVIRONMENT_VALUES.items():
    if fnmatch.fnmatchcase(key, pattern):
      return entry
  return None


def canonical(data, path):
  """The reference module whose names module `path` re-exports (a TF
  shim's mirror), else `path`."""
  return data['modules'][path].get('mirror_of') or path


def gaps_for(data, path, name):
  """Every Gap covering reference name `path`.`name`."""
  key = f'{canonical(data, path)}:{name}'
  return [gap for gap in GAPS
          if any(fnmatch.fnmatchcase(key, p) for p in gap.names)]


def gap_for(data, path, name):
  """The Gap covering `path`.`name`, or None."""
  found = gaps_for(data, path, name)
  return found[0] if found else None
