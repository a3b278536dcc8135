"""Runs one cell's actions on an Estimator API and records what a user sees.

Observables (all plain JSON): per action its hook calls in order, the losses
a training hook fetched, its result (evaluation metrics, predictions,
exported signatures and outputs, variable names); then the model_dir's
checkpoint and events. An exception ends the cell: 'error' names its type,
'refusal' (not compared) whether it is a project error and how many steps
the failing action had run.
"""

import os

import tensorflow as tf

from tests.conformance import observe
from tests.conformance import programs

v1 = tf.compat.v1


class Shared:
  """What the cells of one process share: a base checkpoint, a strategy."""

  def __init__(self, workdir, real):
    self.workdir = workdir
    self.real = real  # Running the real Estimator (writing goldens).
    self.base_dir = os.path.join(workdir, '_base')
    self.base_ckpt = self._write_base()
    self._strategies = {}

  def _write_base(self):
    """model.ckpt-7 of dense/kernel, dense/bias, old_dense/kernel."""
    with tf.Graph().as_default():
      v1.get_variable('dense/kernel', initializer=programs.BASE_KERNEL)
      v1.get_variable('dense/bias', initializer=programs.BASE_BIAS)
      v1.get_variable('old_dense/kernel',
                      initializer=programs.BASE_KERNEL[:, ::-1].copy())
      step = v1.train.create_global_step()
      with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        sess.run(step.assign(programs.BASE_STEP))
        return v1.train.Saver().save(
            sess, os.path.join(self.base_dir, 'model.ckpt'),
            global_step=programs.BASE_STEP)

  def strategy(self, replicas=2):
    if replicas not in self._strategies:
      self._strategies[replicas] = tf.distribute.MirroredStrategy(
          ['/cpu:0', '/cpu:1'][:replicas])
    return self._strategies[replicas]


def _estimator(cell, api, o, rec, shared):
  e = dict(cell.est)
  config_kw = dict(save_summary_steps=1, model_dir=o['model_dir'])
  config_kw.update(e.get('config', {}))
  if e.get('replicas') == 1:  # MirroredStrategy(['/cpu:0']): tf2 runner.
    config_kw.update(train_distribute=shared.strategy(1),
                     eval_distribute=None if shared.real else
                     shared.strategy(1))
  if e.get('replicas', 1) == 2:
    # A TF1 Session sees 2 CPU devices only if its ConfigProto says so.
    # Estimator over MirroredStrategy hands a partial last batch to either
    # replica, run to run: its evaluation is no spec. The spec of an
    # evaluation over replicas is the one-device result (the golden's).
    eval_strategy = None if shared.real else shared.strategy()
    config_kw.update(train_distribute=shared.strategy(),
                     eval_distribute=eval_strategy,
                     session_config=v1.ConfigProto(device_count={'CPU': 2}))
  warm = e.get('warm_start')
  if warm == 'dir':
    warm = shared.base_dir
  elif warm == 'kernel':
    warm = api.WarmStartSettings(shared.base_ckpt,
                                 vars_to_warm_start='dense/kernel')
  elif warm == 'renamed':
    warm = api.WarmStartSettings(
        shared.base_ckpt, vars_to_warm_start='dense/kernel',
        var_name_to_prev_var_name={'dense/kernel': 'old_dense/kernel'})
  if e.get('kind') == 'canned':
    return _one_replica_on_tf2(_canned(api, e['family'],
                                       api.RunConfig(**config_kw)), e, shared)
  model_fn = programs.model_fn_for(o, rec)
  if e.get('kind') == 'tpu':
    tpu_config = api.TPUConfig(**e.get('tpu_config', {}))
    config = api.TPURunConfig(tpu_config=tpu_config, **config_kw)
    return api.TPUEstimator(
        model_fn, config=config, params=e.get('params'), use_tpu=False,
        train_batch_size=programs.BATCH, eval_batch_size=programs.BATCH,
        predict_batch_size=programs.BATCH, warm_start_from=warm,
        **e.get('tpu_kw', {}))
  est = api.Estimator(model_fn, config=api.RunConfig(**config_kw),
                      params=e.get('params'), warm_start_from=warm)
  return _one_replica_on_tf2(est, e, shared)


def _one_replica_on_tf2(est, e, shared):
  if e.get('replicas') == 1 and not shared.real:
    # The facade runs a one-replica strategy on its graph engine, as
    # Estimator runs it; these cells test the tf2 runner (the TPU path) on
    # one replica against the same spec, so they ask for it.
    est._needs_tf2 = lambda mode: True  # pylint: disable=protected-access
  return est


def _canned(api, family, config):
  """A canned Estimator of tf.compat.v1.estimator on the cells' `x`."""
  x = [tf.feature_column.numeric_column('x', shape=[4])]
  if family == 'linear':
    return api.LinearClassifier(x, config=config)
  if family == 'dnn':
    return api.DNNClassifier([3], x, config=config)
  if family == 'dnn_linear_combined':
    return api.DNNLinearCombinedClassifier(
        linear_feature_columns=x, dnn_feature_columns=x,
        dnn_hidden_units=[3], config=config)
  if family == 'baseline':
    return api.BaselineRegressor(config=config)
  raise ValueError(family)


def _act(est, action, kw, o, rec, shared):
  """Runs one action; returns its result as plain values."""
  hooks = [programs.CallLog(rec['hooks'], 'user')] if kw.get('hooks', True) \
      else []
  if kw.get('extra_hook') == 'profiler':
    hooks.append(v1.train.ProfilerHook(
        save_steps=1, output_dir=os.path.join(o['model_dir'], 'profile')))
  elif kw.get('extra_hook') == 'feed_fn':
    hooks.append(v1.train.FeedFnHook(dict))
  opts = dict(o, **kw.get('input', {}))
  if action == 'train':
    listeners = [programs.Listener(rec['hooks'], kw.get('stop_at'))] if kw.get(
        'listeners') else None
    input_fn = programs.input_fn('train', opts)
    if opts.get('input') == 'numpy_input_fn':
      input_fn = o['api'].numpy_input_fn(
          {'x': programs.TRAIN_X}, programs.TRAIN_Y, batch_size=programs.BATCH,
          num_epochs=None, shuffle=False)
    est.train(input_fn, hooks=hooks,
              steps=kw.get('steps'), max_steps=kw.get('max_steps'),
              saving_listeners=listeners)
    return None
  if action == 'evaluate':
    path = None
    if kw.get('checkpoint') == 'first':
      path = tf.train.get_checkpoint_state(
          o['model_dir']).all_model_checkpoint_paths[0]
    return observe.plain(est.evaluate(
        programs.input_fn('eval', opts), steps=kw.get('steps'), hooks=hooks,
        name=kw.get('name'), checkpoint_path=path))
  if action == 'predict':
    path = None
    if kw.get('checkpoint') == 'first':
      path = tf.train.get_checkpoint_state(
          o['model_dir']).all_model_checkpoint_paths[0]
    out = est.predict(programs.input_fn('predict', opts), hooks=hooks,
                      checkpoint_path=path,
                      predict_keys=kw.get('keys'),
                      yield_single_examples=kw.get('single', True))
    return [observe.plain(p) for p in out]
  if action == 'export':
    path = est.export_saved_model(os.path.join(o['model_dir'], 'export'),
                                  programs.serving_input_fn(opts))
    return observe.export(path.decode() if isinstance(path, bytes) else path,
                          programs.serving_feed(opts))
  if action == 'train_and_evaluate':
    api = o['api']
    exporter = api.FinalExporter('final', programs.serving_input_fn(opts))
    result = api.train_and_evaluate(
        est, api.TrainSpec(programs.input_fn('train', opts),
                           max_steps=kw['max_steps']),
        api.EvalSpec(programs.input_fn('eval', opts), steps=None,
                     exporters=[exporter], throttle_secs=0))
    metrics = result[0] if result else None
    return {'metrics': observe.plain(metrics),
            'exports': len(result[1]) if result else None}
  if action == 'variables':
    names = est.get_variable_names()
    return {n: observe.plain(est.get_variable_value(n)) for n in names}
  raise ValueError(action)


def run_cell(cell, api, shared):
  """The observables of cell run on api (a namespace of Estimator names)."""
  from trainer.api import errors  # pylint: disable=g-import-not-at-top
  model_dir = os.path.join(shared.workdir, cell.name)
  o = dict(cell.opts, **(cell.spec_opts if shared.real else {}))
  o.update(api=api, model_dir=model_dir, base_ckpt=shared.base_ckpt)
  programs.HOST_DIR[0] = os.path.join(model_dir, 'host')
  rec = {'hooks': [], 'losses': [], 'side': {}}
  obs = {'actions': []}
  try:
    est = _estimator(cell, api, o, rec, shared)
    for action, kw in cell.actions:
      entry = {'action': action}
      obs['actions'].append(entry)
      del rec['hooks'][:], rec['losses'][:]
      try:
        entry['result'] = _act(est, action, kw, o, rec, shared)
      finally:
        entry['hooks'] = list(rec['hooks'])
        entry['losses'] = [v for v in rec['losses'] if isinstance(v, float)]
  except Exception as e:  # pylint: disable=broad-except
    obs['error'] = type(e).__name__
    obs['refusal'] = {
        'trainer_error': isinstance(e, errors.TrainerError),
        'action': obs['actions'][-1]['action'] if obs['actions'] else None,
        'steps_run': (len(obs['actions'][-1]['losses']) + obs['actions'][-1][
            'hooks'].count('user.before_run')) if obs['actions'] else 0,
        'message': str(e)[:400]}
  # What a user reads once the program exits: writers still open after a
  # failed call (Estimator's cached FileWriters) are flushed at exit.
  tf.compat.v1.summary.FileWriterCache.clear()
  obs['checkpoint'] = observe.checkpoint(model_dir)
  obs['events'] = observe.events(model_dir, racy_tags=cell.racy_tags)
  obs['side'] = observe.plain(rec['side'])
  return obs
