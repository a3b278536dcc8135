"""The conformance cells: one small legacy program each, along the axes of
the Estimator/TPUEstimator contract (input_fn forms, model_fn signatures,
spec types, metrics, Scaffold, EMA, summaries, hooks, modes, replicas, warm
start).

A cell's `opts` configure programs.model_fn_for / input_fn, `est` the
Estimator (kind 'estimator' or 'tpu' (TPUEstimator, use_tpu=False),
replicas (RunConfig train/eval_distribute=MirroredStrategy over 1 or 2
CPUs: the tf2 runner; none: one device), RunConfig kwargs, warm start),
`actions` the calls made in order.

Replicas: the golden trains under the real Estimator's
MirroredStrategy (each replica a batch of input_fn) but evaluates on one
device: Estimator over replicas gives a partial last batch to either replica
from run to run (and cannot evaluate numpy_function metrics or an EMA Saver
there), while the contract (issue 17, point 6) is the one-device result.
The project evaluates each replica's batch in turn, as one device.

Expectations on the project, per lane ('new': the installed facade on
TF >= 2.16, where tests/conformance/conformance_test.py runs; '*': every lane):
  refused: {lane: error type}: the project refuses it before any step runs,
      with that project error (a trainer.api.errors.TrainerError);
  differs: {lane: reason}: a known gap, compared and expected to fail
      (xfail strict): the observables differ from the real Estimator's.
Otherwise the cell must match the golden.
"""

import dataclasses

T3 = ('train', {'steps': 3})
E = ('evaluate', {})  # steps=None: a full pass, 4 + 4 + 2 examples.
P = ('predict', {})
X = ('export', {})


def quiet(actions):
  """actions without the user hook (hook calls observed by other cells)."""
  return tuple((name, dict(kw, hooks=False)) for name, kw in actions)


@dataclasses.dataclass(frozen=True)
class Cell:
  name: str
  axis: str
  doc: str
  opts: dict = dataclasses.field(default_factory=dict)
  est: dict = dataclasses.field(default_factory=dict)
  actions: tuple = (T3, E, P)
  refused: dict = dataclasses.field(default_factory=dict)
  differs: dict = dataclasses.field(default_factory=dict)
  # Opts overriding `opts` in the golden run only: the program whose
  # Estimator result is the spec of one the real Estimator cannot run.
  spec_opts: dict = dataclasses.field(default_factory=dict)
  # Summary tags whose values are not compared: they read variables that the
  # same step updates, in no set order (a canned linear model's `bias`).
  racy_tags: tuple = ()

  def expectation(self, lane):
    """('match' | 'refused' | 'differs', detail) on lane ('new')."""
    for kind in ('refused', 'differs'):
      table = getattr(self, kind)
      if lane in table or '*' in table:
        return kind, table.get(lane, table.get('*'))
    return 'match', ''


def _tpu(**est):
  return dict(kind='tpu', **est)


def _tpu_opts(**opts):
  return dict(spec='tpu', input_args='params', **opts)


_REP1 = {'replicas': 1}
_REP2 = {'replicas': 2}
# Known gaps of the project's tf2 runner, found here.


def _gaps(*reasons):
  return {'*': '2 replicas: ' + '; '.join(reasons)}


def _tf2(*reasons):
  return {'*': 'tf2 runner, 1 replica: ' + '; '.join(reasons)}


CELLS = [
    # input_fn forms and arguments.
    Cell('input_dataset', 'input_fn', 'input_fn() returns a Dataset of '
         '(features dict, labels)'),
    Cell('input_params', 'input_fn', 'input_fn(params)',
         {'input_args': 'params'}),
    Cell('input_mode_params_config', 'input_fn',
         'input_fn(mode, params, config)',
         {'input_args': 'mode_params_config'}),
    Cell('input_context_arg', 'input_fn',
         'input_fn(params, input_context=None) on one device',
         {'input_args': 'input_context'}),
    Cell('input_tensors', 'input_fn', 'input_fn returns make_one_shot_'
         'iterator(ds).get_next() tensors (features-only in predict)',
         {'input': 'tensors'}),
    Cell('input_tensors_params', 'input_fn',
         'get_next() tensors from input_fn(params)',
         {'input': 'tensors', 'input_args': 'params'}, actions=(T3, E)),
    Cell('input_features_tensor', 'input_fn', 'features a single Tensor, '
         'not a dict; export with a tensor receiver',
         {'features': 'tensor'}, actions=(T3, E, P, X)),
    Cell('input_labels_dict', 'input_fn', 'labels a dict of Tensors',
         {'labels': 'dict'}, actions=(T3, E)),
    Cell('input_finite_train', 'input_fn', 'train(steps=None) until a '
         'finite Dataset ends (5 batches)', {'finite_train': True},
         actions=(('train', {}),)),
    Cell('input_tensors_finite_train', 'input_fn', 'train(steps=None) until '
         'get_next() tensors raise OutOfRange',
         {'finite_train': True, 'input': 'tensors'}, actions=(('train', {}),)),
    Cell('input_eval_drop_remainder', 'input_fn', 'evaluate over '
         'drop_remainder batches (2 full batches)', {'drop_remainder': True},
         actions=(T3, E)),
    Cell('input_eval_steps', 'input_fn', 'evaluate(steps=2)',
         actions=(T3, ('evaluate', {'steps': 2}))),
    # model_fn signatures.
    Cell('model_fn_flmp', 'model_fn', 'model_fn(features, labels, mode, '
         'params)', {'signature': 'flmp'}),
    Cell('model_fn_flm', 'model_fn', 'model_fn(features, labels, mode)',
         {'signature': 'flm'}),
    Cell('model_fn_fl', 'model_fn', 'model_fn(features, labels) (train only)',
         {'signature': 'fl'}, actions=(T3,)),
    # spec types per mode.
    Cell('tpu_spec', 'spec', 'TPUEstimator(use_tpu=False) with '
         'TPUEstimatorSpec in every mode', _tpu_opts(), _tpu()),
    Cell('tpu_estimator_spec', 'spec', 'TPUEstimator returning EstimatorSpec',
         {'input_args': 'params'}, _tpu()),
    Cell('estimator_tpu_spec', 'spec', 'Estimator returning TPUEstimatorSpec',
         {'spec': 'tpu'}, actions=(T3,)),
    Cell('predictions_tensor', 'spec', 'predictions a Tensor, not a dict',
         {'predictions': 'tensor'}, actions=(T3, P, X)),
    Cell('predict_keys', 'spec', "predict(predict_keys=['classes'])",
         actions=(T3, ('predict', {'keys': ['classes']}))),
    Cell('predict_batches', 'spec', 'predict(yield_single_examples=False)',
         actions=(T3, ('predict', {'single': False}))),
    Cell('tpu_predictions_tensor', 'spec', 'TPUEstimatorSpec predictions a '
         'Tensor', _tpu_opts(predictions='tensor'), _tpu(), (T3, P)),
    # metrics.
    Cell('metrics_v1', 'metrics', 'eval_metric_ops of tf.compat.v1.metrics',
         {'metrics': 'v1'}, actions=(T3, E)),
    Cell('metrics_keras', 'metrics', 'eval_metric_ops a Keras Metric object',
         {'metrics': 'keras'}, actions=(T3, E)),
    Cell('metrics_py', 'metrics', 'stateful numpy_function metric: update '
         'accumulates, value computed once', {'metrics': 'py'},
         actions=(T3, E)),
    Cell('metrics_host_tpu', 'metrics', 'TPUEstimatorSpec eval_metrics '
         '(metric_fn, [tensors]) on the host', _tpu_opts(metrics='host'),
         _tpu(), (T3, E)),
    Cell('metrics_host_dict_tpu', 'metrics', 'eval_metrics (metric_fn, '
         '{name: tensor})', _tpu_opts(metrics='host_dict'), _tpu(), (T3, E)),
    Cell('metrics_v1_eval_steps', 'metrics', 'v1 metrics over evaluate('
         'steps=2)', {'metrics': 'v1'},
         actions=(T3, ('evaluate', {'steps': 2}))),
    Cell('metrics_eval_name', 'metrics', "evaluate(name='holdout'): "
         'eval_holdout events', {'metrics': 'v1'},
         actions=(T3, ('evaluate', {'name': 'holdout'}))),
    Cell('metrics_checkpoint_path', 'metrics', 'evaluate(checkpoint_path='
         'the first kept checkpoint)', {'metrics': 'v1'},
         {'config': {'save_checkpoints_steps': 1}},
         (T3, ('evaluate', {'checkpoint': 'first'}))),
    Cell('metrics_no_checkpoint', 'metrics', 'evaluate before any training '
         '(fresh variables)', {'metrics': 'v1'}, actions=(E,)),
    Cell('metrics_v1_2rep', 'metrics', 'v1 metrics, 2 replicas, partial last '
         'batch', {'metrics': 'v1'}, _REP2, quiet((T3, E))),
    Cell('metrics_keras_2rep', 'metrics', 'Keras metric, 2 replicas',
         {'metrics': 'keras'}, _REP2, quiet((T3, E))),
    Cell('metrics_py_2rep', 'metrics', 'numpy_function metric, 2 replicas',
         {'metrics': 'py'}, _REP2, quiet((T3, E))),
    # Scaffold and init_from_checkpoint.
    Cell('scaffold_init_fn', 'scaffold', 'Scaffold(init_fn=restore a base '
         'checkpoint)', {'scaffold': 'init_fn'}),
    Cell('scaffold_saver', 'scaffold', 'Scaffold(saver=Saver(max_to_keep=1))'
         ' saves the checkpoints', {'scaffold': 'saver_keep1'},
         {'config': {'save_checkpoints_steps': 1}}, (T3, E)),
    Cell('scaffold_init_op_group', 'scaffold', 'Scaffold(init_op=tf.group('
         'global/local initializers))', {'scaffold': 'init_op_group'}),
    Cell('scaffold_init_op_assign', 'scaffold', 'Scaffold(init_op=group('
         'initializers, an assign))', {'scaffold': 'init_op_assign'},
         actions=(T3,)),
    Cell('scaffold_init_from_checkpoint', 'scaffold', 'init_from_checkpoint '
         'in a Scaffold-building function after the variables exist',
         {'scaffold': 'init_from_checkpoint'}),
    Cell('tpu_scaffold_fn_init_from_checkpoint', 'scaffold', 'scaffold_fn '
         'calling init_from_checkpoint', _tpu_opts(
             scaffold='init_from_checkpoint'), _tpu()),
    Cell('init_from_checkpoint_after_variables', 'scaffold',
         'init_from_checkpoint in the model_fn after the variables exist, '
         'every mode', {'init_from_checkpoint': 'after_variables'}),
    Cell('init_from_checkpoint_model_fn', 'scaffold', 'init_from_checkpoint '
         'first in the model_fn, before any variable (a no-op in TF1), every '
         'mode',
         {'init_from_checkpoint': 'model_fn'}),
    Cell('init_from_checkpoint_predict_only', 'scaffold', 'init_from_'
         'checkpoint after the variables, predict with no checkpoint in '
         'model_dir', {'init_from_checkpoint': 'after_variables'},
         actions=(P,)),
    Cell('init_from_checkpoint_resume', 'scaffold', 'init_from_checkpoint '
         'ignored once model_dir has a checkpoint',
         {'init_from_checkpoint': 'after_variables'},
         actions=(('train', {'steps': 2}), ('train', {'steps': 2}))),
    # EMA.
    Cell('ema', 'ema', 'ExponentialMovingAverage in TRAIN; eval/predict '
         'restore the averages with Scaffold(saver=...)', {'ema': True}),
    Cell('ema_tpu', 'ema', 'EMA with a TPUEstimatorSpec scaffold_fn',
         _tpu_opts(ema=True), _tpu()),
    Cell('ema_2rep', 'ema', 'EMA over 2 replicas', {'ema': True}, _REP2,
         quiet((T3, E))),
    # summaries and host_call.
    Cell('summary_v1_scalar', 'summaries', 'tf.compat.v1.summary.scalar in '
         'the model_fn', {'summary': 'v1_scalar'}, actions=(T3,)),
    Cell('summary_v1_histogram', 'summaries', 'tf.compat.v1.summary.'
         'histogram', {'summary': 'v1_hist'}, actions=(T3,)),
    Cell('summary_every_2_steps', 'summaries', 'save_summary_steps=2',
         {'summary': 'v1_scalar'}, {'config': {'save_summary_steps': 2}},
         (('train', {'steps': 4}),)),
    Cell('summary_v2_writer', 'summaries', 'TF2 tf.summary writer made in '
         'the model_fn, control_dependencies([writer.init()]), '
         'all_v2_summary_ops()', {'summary': 'v2_writer'}, actions=(T3,)),
    Cell('summary_v2_record_if', 'summaries', 'TF2 writer with record_if('
         'step % 2 == 0)', {'summary': 'v2_record_if'},
         actions=(('train', {'steps': 4}),)),
    Cell('host_call_tpu', 'summaries', 'TPUEstimatorSpec host_call writing '
         'TF2 summaries', _tpu_opts(host_call=True), _tpu(), (T3,)),
    Cell('summary_v1_2rep', 'summaries', 'v1 summary, 2 replicas',
         {'summary': 'v1_scalar'}, _REP2, quiet((T3,))),
    Cell('log_step_count', 'summaries', 'log_step_count_steps=1: '
         'global_step/sec events', est={'config': {'log_step_count_steps': 1}},
         actions=(T3,)),
    # hooks.
    Cell('hooks_order', 'hooks', 'training/evaluation/prediction_hooks '
         'beside hooks=[...]: call order', {'spec_hooks': True}),
    Cell('hooks_listeners', 'hooks', 'saving_listeners around checkpoints '
         'every 2 steps', est={'config': {'save_checkpoints_steps': 2}},
         actions=(('train', {'steps': 4, 'listeners': True}),)),
    Cell('hooks_listener_stops', 'hooks', 'a saving listener\'s after_save '
         'returns True at step 2: training stops', est={'config': {
             'save_checkpoints_steps': 2}},
         actions=(('train', {'steps': 6, 'listeners': True, 'stop_at': 2}),)),
    Cell('hooks_request_stop', 'hooks', 'a training hook calls '
         'request_stop() after 2 steps of train(steps=5)', {'stop_hook': True},
         actions=(('train', {'steps': 5}),)),
    Cell('hooks_none', 'hooks', 'no hooks at all (losses from events)',
         {'loss_hook': False}, actions=(('train', {'steps': 3,
                                                   'hooks': False}),)),
    Cell('hooks_nan_loss', 'hooks', 'NaN loss: Estimator\'s NanTensorHook '
         'raises', {'nan_loss': True}, actions=(T3,)),
    Cell('hooks_tpu', 'hooks', 'TPUEstimatorSpec hooks', _tpu_opts(
        spec_hooks=True), _tpu()),
    Cell('hooks_2rep', 'hooks', 'spec and user hooks, 2 replicas',
         {'spec_hooks': True}, _REP2, (T3, E)),
    Cell('hooks_profiler', 'hooks', 'ProfilerHook(save_steps=1) in '
         'train(hooks=...)',
         actions=(('train', {'steps': 3, 'extra_hook': 'profiler'}),)),
    Cell('hooks_feed_fn', 'hooks', 'FeedFnHook in train(hooks=...)',
         actions=(('train', {'steps': 3, 'extra_hook': 'feed_fn'}),)),
    # modes.
    Cell('numpy_input_fn', 'input_fn', 'tf.compat.v1.estimator.inputs.'
         'numpy_input_fn (queue-based)', {'input': 'numpy_input_fn'},
         actions=(T3,), differs={'*': (
             "numpy_input_fn on tf.data: no queue-fill summary "
             "('enqueue_input/.../fraction_over_0_of_1000_full') in the "
             'events')}),
    # heads: a tf.estimator head makes the spec in the model_fn.
    Cell('head_binary', 'heads', 'BinaryClassHead(thresholds=(0.3,)) '
         '.create_estimator_spec: metrics, predictions, classify/regress/'
         'predict signatures', {'head': 'binary', 'serving': 'parsing'},
         actions=(T3, E, P, X)),
    Cell('head_binary_2rep', 'heads', 'BinaryClassHead, 2 replicas',
         {'head': 'binary'}, _REP2),
    Cell('head_multi', 'heads', 'MultiHead of BinaryClassHead and '
         'RegressionHead: merged loss, per-head metrics and exports',
         {'head': 'multi'}, actions=(T3, E, P, X)),
    Cell('canned_linear_classifier', 'canned', 'tf.compat.v1.estimator.'
         'LinearClassifier on a numeric feature column',
         est={'kind': 'canned', 'family': 'linear'}, actions=(T3, E, P, X),
         racy_tags=('linear/bias',)),
    Cell('canned_dnn_classifier', 'canned', 'tf.compat.v1.estimator.'
         'DNNClassifier (one hidden layer, seeded initial values)',
         est={'kind': 'canned', 'family': 'dnn',
              'config': {'tf_random_seed': 3}}, actions=(T3, E, P, X)),
    Cell('canned_wide_deep', 'canned', 'tf.compat.v1.estimator.'
         'DNNLinearCombinedClassifier (seeded)',
         est={'kind': 'canned', 'family': 'dnn_linear_combined',
              'config': {'tf_random_seed': 3}}, actions=(T3, E, P, X),
         racy_tags=('linear/bias',)),
    Cell('canned_baseline_regressor', 'canned', 'tf.compat.v1.estimator.'
         'BaselineRegressor', est={'kind': 'canned', 'family': 'baseline'},
         actions=(T3, E, P, X)),
    Cell('canned_linear_2rep', 'canned', 'LinearClassifier with '
         'train_distribute=MirroredStrategy over 2 CPUs',
         est={'kind': 'canned', 'family': 'linear', 'replicas': 2},
         # Without hooks in evaluate/predict: over 2 replicas the tf2
         # runner's hook step read races the other replica's trace.
         actions=(T3, ('evaluate', {'hooks': False}),
                  ('predict', {'hooks': False})),
         racy_tags=('linear/bias',)),
    Cell('canned_linear_1rep', 'canned', 'LinearClassifier with '
         'train_distribute=MirroredStrategy of one device (tf2 runner)',
         est={'kind': 'canned', 'family': 'linear', 'replicas': 1},
         actions=(T3, E, P),
         racy_tags=('linear/bias',)),
    Cell('canned_train_and_evaluate', 'canned', 'LinearClassifier under '
         'train_and_evaluate with a FinalExporter',
         {}, {'kind': 'canned', 'family': 'linear',
                             'config': {'save_checkpoints_steps': 2}},
         (('train_and_evaluate', {'max_steps': 4}),),
         racy_tags=('linear/bias',)),
    Cell('train_max_steps', 'modes', 'train(max_steps=3) twice (the second '
         'skipped), then train(steps=2)',
         actions=(('train', {'max_steps': 3}), ('train', {'max_steps': 3}),
                  ('train', {'steps': 2}))),
    Cell('train_resume', 'modes', 'train(steps=2) twice resumes',
         actions=(('train', {'steps': 2}), ('train', {'steps': 2}))),
    Cell('export_predictions', 'modes', 'export_saved_model: predictions '
         'signature', actions=(T3, X)),
    Cell('export_outputs', 'modes', 'export_outputs PredictOutput + '
         'ClassificationOutput', {'export_outputs': 'classify'},
         actions=(T3, X)),
    Cell('export_parsing', 'modes', 'build_parsing_serving_input_receiver_fn '
         'export', {'serving': 'parsing'}, actions=(T3, X)),
    Cell('export_tpu', 'modes', 'TPUEstimator.export_saved_model '
         '(export_to_tpu=False)', _tpu_opts(), _tpu(tpu_kw={
             'export_to_tpu': False}), (T3, X)),
    Cell('train_and_evaluate', 'modes', 'train_and_evaluate with a '
         'FinalExporter', {'metrics': 'v1'},
         {'config': {'save_checkpoints_steps': 2}},
         (('train_and_evaluate', {'max_steps': 4}),)),
    Cell('variables', 'modes', 'get_variable_names / get_variable_value',
         actions=(T3, ('variables', {}))),
    Cell('no_checkpoint_cadence', 'modes', 'RunConfig(save_checkpoints_'
         'secs=None, save_checkpoints_steps=None)', est={'config': {
             'save_checkpoints_secs': None, 'save_checkpoints_steps': None}},
         actions=(T3,)),
    Cell('predict_checkpoint_path', 'modes', 'predict(checkpoint_path=the '
         'first kept checkpoint)',
         est={'config': {'save_checkpoints_steps': 1}},
         actions=(T3, ('predict', {'checkpoint': 'first'}))),
    Cell('tpu_iterations_per_loop', 'spec', 'TPUConfig(iterations_per_loop=2)'
         ', train(steps=5)', _tpu_opts(), _tpu(tpu_config={
             'iterations_per_loop': 2}), (('train', {'steps': 5}),)),
    Cell('keep_checkpoint_max', 'modes', 'save_checkpoints_steps=1, '
         'keep_checkpoint_max=2', est={'config': {
             'save_checkpoints_steps': 1, 'keep_checkpoint_max': 2}},
         actions=(('train', {'steps': 4}),)),
    Cell('optimizer_adam', 'modes', 'AdamOptimizer (slot variable names)',
         {'optimizer': 'adam'}, actions=(T3, E)),
    Cell('optimizer_momentum', 'modes', 'MomentumOptimizer',
         {'optimizer': 'momentum'}, actions=(T3,)),
    Cell('tensor_initializer', 'modes', 'get_variable(initializer=a '
         'Tensor)', {'tensor_init': True}, actions=(T3, E)),
    Cell('random_init_seeded', 'modes', 'glorot-initialised kernel with '
         'RunConfig(tf_random_seed=3)', {'random_init': True},
         {'config': {'tf_random_seed': 3}}, (T3,)),
    # 2 replicas.
    Cell('rep2_train_eval_predict', 'replicas', 'MirroredStrategy over 2 '
         'CPUs: train, evaluate (partial last batch), predict', est=_REP2,
         actions=quiet((T3, E, P))),
    # Estimator over MirroredStrategy raises ValueError for tensors; the
    # spec (issue 17, point 3) is the result of the Dataset they come from.
    Cell('rep2_input_tensors', 'replicas', 'get_next() tensors, 2 replicas '
         '(spec: the same Dataset returned)',
         {'input': 'tensors'}, _REP2, quiet((T3, E)),
         spec_opts={'input': 'dataset'}),
    Cell('rep2_input_context', 'replicas', 'input_fn(params, input_context)'
         ', 2 replicas', {'input_args': 'input_context'}, _REP2,
         quiet((T3, E))),
    Cell('rep2_tensor_initializer', 'replicas', 'get_variable(initializer='
         'a Tensor), 2 replicas', {'tensor_init': True}, _REP2, quiet((T3, E))),
    # (A TF2 writer made in the model_fn over 2 replicas: Estimator itself
    # fails, NotFoundError: no cell.)
    Cell('rep2_init_from_checkpoint_after_variables', 'replicas',
         'init_from_checkpoint after the variables, every mode, 2 replicas',
         {'init_from_checkpoint': 'after_variables'}, _REP2,
         quiet((T3, E, P))),
    Cell('rep2_init_from_checkpoint', 'replicas', 'init_from_checkpoint first '
         'in the model_fn (a no-op in TF1), every mode, 2 replicas',
         {'init_from_checkpoint': 'model_fn'}, _REP2, quiet((T3, E, P))),
    Cell('rep2_adam', 'replicas', 'Adam, 2 replicas', {'optimizer': 'adam'},
         _REP2, quiet((T3,))),
    Cell('rep2_export', 'replicas', 'export after 2-replica training',
         est=_REP2, actions=quiet((T3, X))),
    Cell('rep2_train_and_evaluate', 'replicas', 'train_and_evaluate, '
         '2 replicas', {'metrics': 'v1'},
         dict(_REP2, config={'save_checkpoints_steps': 2}),
         quiet((('train_and_evaluate', {'max_steps': 4}),))),
    # 1 replica under tf.distribute: the project's tf2 runner.
    Cell('rep1_train_eval_predict', 'replicas', 'MirroredStrategy over 1 '
         "CPU (RunConfig train_distribute): the project's tf2 runner",
         est=_REP1,
         actions=quiet((T3, E, P))),
    Cell('rep1_metrics_v1', 'replicas', 'v1 metrics, tf2 runner',
         {'metrics': 'v1'}, _REP1, quiet((T3, E))),
    Cell('rep1_metrics_py', 'replicas', 'numpy_function metric (value once),'
         ' tf2 runner', {'metrics': 'py'}, _REP1, quiet((T3, E))),
    Cell('rep1_input_tensors', 'replicas', 'get_next() tensors, tf2 runner '
         '(spec: the same Dataset returned)', {'input': 'tensors'}, _REP1,
         quiet((T3, E)), spec_opts={'input': 'dataset'}),
    Cell('rep1_summary_v2_writer', 'replicas', 'TF2 writer made in the '
         'model_fn, tf2 runner', {'summary': 'v2_writer'}, _REP1, quiet((T3,))),
    Cell('rep1_summary_v1', 'replicas', 'v1 summary, tf2 runner',
         {'summary': 'v1_scalar'}, _REP1, quiet((T3,))),
    Cell('rep1_init_from_checkpoint_after_variables', 'replicas',
         'init_from_checkpoint after the variables, every mode, tf2 runner',
         {'init_from_checkpoint': 'after_variables'}, _REP1,
         quiet((T3, E, P))),
    Cell('rep1_init_from_checkpoint', 'replicas', 'init_from_checkpoint first '
         'in the model_fn (a no-op in TF1), every mode, tf2 runner',
         {'init_from_checkpoint': 'model_fn'}, _REP1,
         actions=quiet((T3, E, P))),
    Cell('rep1_scaffold_init_fn', 'replicas', 'Scaffold(init_fn=...), tf2 '
         'runner', {'scaffold': 'init_fn'}, _REP1,
         actions=quiet((T3, E, P))),
    Cell('rep1_ema', 'replicas', 'EMA, tf2 runner', {'ema': True}, _REP1,
         actions=quiet((T3, E, P))),
    Cell('rep1_hooks_order', 'replicas', 'spec and user hooks, tf2 runner',
         {'spec_hooks': True}, _REP1),
    Cell('rep1_export', 'replicas', 'export after tf2-runner training',
         est=_REP1, actions=quiet((T3, X))),
    # warm start.
    Cell('warm_start_dir', 'warm_start', 'warm_start_from=a model_dir',
         est={'warm_start': 'dir'}, actions=(T3,)),
    Cell('warm_start_vars', 'warm_start', "WarmStartSettings(vars_to_warm_"
         "start='dense/kernel')", est={'warm_start': 'kernel'},
         actions=(T3,)),
    Cell('warm_start_renamed', 'warm_start', 'WarmStartSettings(var_name_to_'
         'prev_var_name=...)', est={'warm_start': 'renamed'}, actions=(T3,)),
    Cell('warm_start_tpu', 'warm_start', 'TPUEstimator(warm_start_from=...)',
         _tpu_opts(), _tpu(warm_start='dir'), (T3, E)),
    Cell('warm_start_2rep', 'warm_start', 'warm start, 2 replicas',
         est=dict(_REP2, warm_start='dir'), actions=quiet((T3,))),
]

BY_NAME = {c.name: c for c in CELLS}
assert len(BY_NAME) == len(CELLS), 'duplicate cell names'
