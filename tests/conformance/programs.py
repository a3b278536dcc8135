"""The cells' programs: tiny numpy data, input_fns and one model_fn factory.

A cell's `opts` (a dict) picks each axis; every program is a 4->2 linear
classifier whose variables start from constants (so no seed is involved
unless a cell asks for one), trained a few steps on 20 examples.
"""

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1

_rng = np.random.RandomState(0)
TRAIN_X = _rng.uniform(-1, 1, (20, 4)).astype(np.float32)
TRAIN_Y = (TRAIN_X @ np.array([1., -1., .5, 2.]) > 0).astype(np.int32)
EVAL_X = _rng.uniform(-1, 1, (10, 4)).astype(np.float32)  # 4 + 4 + 2
EVAL_Y = (EVAL_X @ np.array([1., -1., .5, 2.]) > 0).astype(np.int32)
SERVE_X = EVAL_X[:3]
KERNEL0 = np.array([[.1, -.2], [.3, .05], [-.15, .2], [.25, -.1]], np.float32)
BIAS0 = np.array([.01, -.01], np.float32)
BATCH = 4
BASE_KERNEL = KERNEL0 * -2.  # The shared base checkpoint's values.
BASE_BIAS = np.array([.5, -.5], np.float32)
BASE_STEP = 7


def _arrays(mode):
  return (TRAIN_X, TRAIN_Y) if mode == 'train' else (EVAL_X, EVAL_Y)


def dataset(mode, o, batch=BATCH):
  """The (features, labels) or features-only dataset of a cell's input."""
  x, y = _arrays(mode)
  features = x if o.get('features') == 'tensor' else {'x': x}
  labels = {'y': y} if o.get('labels') == 'dict' else y
  if mode == 'predict' or o.get('input', '').startswith('features_only'):
    ds = tf.data.Dataset.from_tensor_slices(features)
  else:
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
  if mode == 'train' and not o.get('finite_train'):
    ds = ds.repeat()
  return ds.batch(batch, drop_remainder=o.get('drop_remainder', False))


def input_fn(mode, o):
  """An input_fn for mode ('train', 'eval', 'predict') of the form o names."""
  tensors = o.get('input', 'dataset').endswith('tensors')

  def build(batch):
    ds = dataset(mode, o, batch)
    if tensors:
      return v1.data.make_one_shot_iterator(ds).get_next()
    return ds

  args = o.get('input_args', '')
  if args == 'params':
    return lambda params: build(params.get('batch_size', BATCH))
  if args == 'mode_params_config':
    def fn(mode, params, config):  # pylint: disable=redefined-outer-name
      assert isinstance(mode, str) and config is not None
      return build(params.get('batch_size', BATCH))
    return fn
  if args == 'input_context':
    def fn(params, input_context=None):  # pylint: disable=function-redefined
      del input_context
      return build(params.get('batch_size', BATCH))
    return fn
  return lambda: build(BATCH)


def serving_input_fn(o):
  """A raw or parsing serving_input_receiver_fn for the cell's features."""
  if o.get('serving') == 'parsing':
    spec = {'x': tf.io.FixedLenFeature([4], tf.float32)}
    return o['api'].build_parsing_serving_input_receiver_fn(spec)

  def fn():
    x = v1.placeholder(tf.float32, [None, 4], name='x')
    if o.get('features') == 'tensor':
      return o['api'].TensorServingInputReceiver(x, {'x': x})
    return o['api'].ServingInputReceiver({'x': x}, {'x': x})
  return fn


def serving_feed(o):
  """The fixed input the exported signatures are called with."""
  if o.get('serving') == 'parsing':
    examples = [tf.train.Example(features=tf.train.Features(feature={
        'x': tf.train.Feature(float_list=tf.train.FloatList(value=row))}))
                .SerializeToString() for row in SERVE_X]
    # Classify and regress signatures take them as 'inputs'.
    return {'examples': np.array(examples), 'inputs': np.array(examples)}
  return {'x': SERVE_X}


def _linear(features, o):
  x = features if o.get('features') == 'tensor' else features['x']
  if o.get('random_init'):
    kernel = v1.get_variable('dense/kernel', [4, 2])
  elif o.get('tensor_init'):  # A Tensor as initializer (no shape given).
    kernel = v1.get_variable('dense/kernel', initializer=tf.constant(KERNEL0))
  else:
    kernel = v1.get_variable('dense/kernel', [4, 2],
                             initializer=tf.constant_initializer(KERNEL0))
  bias = v1.get_variable('dense/bias', [2],
                         initializer=tf.constant_initializer(BIAS0))
  return tf.matmul(x, kernel) + bias


def _optimizer(o, lr=0.1):
  kind = o.get('optimizer', 'sgd')
  if kind == 'adam':
    return v1.train.AdamOptimizer(lr)
  if kind == 'momentum':
    return v1.train.MomentumOptimizer(lr, 0.9)
  return v1.train.GradientDescentOptimizer(lr)


class CallLog(v1.train.SessionRunHook):
  """Appends 'NAME.method' to log at every hook call."""

  def __init__(self, log, name, fetch=None, stop_at=None):
    self._log, self._name = log, name
    self._fetch, self._stop_at = fetch, stop_at
    self._runs = 0

  def _add(self, what):
    self._log.append(f'{self._name}.{what}')

  def begin(self):
    self._add('begin')

  def after_create_session(self, session, coord):
    del session, coord
    self._add('after_create_session')

  def before_run(self, run_context):
    self._add('before_run')
    if self._fetch is not None:
      return v1.train.SessionRunArgs(self._fetch)
    return None

  def after_run(self, run_context, run_values):
    self._add('after_run')
    self._runs += 1
    if self._fetch is not None:
      self._log.append(float(np.asarray(run_values.results)))
    if self._stop_at is not None and self._runs >= self._stop_at:
      run_context.request_stop()

  def end(self, session):
    del session
    self._add('end')


class Listener(v1.train.CheckpointSaverListener):
  """Logs a CheckpointSaverListener's calls with their global steps;
  after_save returns True (stop) from step stop_at on."""

  def __init__(self, log, stop_at=None):
    self._log, self._stop_at = log, stop_at

  def begin(self):
    self._log.append('listener.begin')

  def before_save(self, session, global_step_value):
    self._log.append(f'listener.before_save@{int(global_step_value)}')

  def after_save(self, session, global_step_value):
    self._log.append(f'listener.after_save@{int(global_step_value)}')
    # True asks Estimator to stop training.
    return self._stop_at is not None and global_step_value >= self._stop_at

  def end(self, session, global_step_value):
    self._log.append(f'listener.end@{int(global_step_value)}')


class PyMetric:
  """A COCO-style metric: numpy_function update accumulates, value once."""

  def __init__(self, side):
    self._side = side
    self._correct, self._seen = 0, 0

  def update(self, labels, predictions):
    self._correct += int(np.sum(labels == predictions))
    self._seen += len(labels)
    return np.int32(len(labels))

  def value(self):
    self._side['py_metric_value_calls'] = self._side.get(
        'py_metric_value_calls', 0) + 1
    return np.float32(self._correct / max(self._seen, 1))

  def ops(self, labels, predictions):
    update = tf.numpy_function(self.update, [labels, predictions], tf.int32)
    value = tf.numpy_function(self.value, [], tf.float32)
    return value, update


def _v1_metrics(labels, classes, loss_vec):
  return {'accuracy': v1.metrics.accuracy(labels, classes),
          'mean_loss': v1.metrics.mean(loss_vec)}


def _metric_fn(labels, logits):
  classes = tf.argmax(logits, 1, output_type=tf.int32)
  return {'accuracy': v1.metrics.accuracy(labels, classes),
          'auc_like': v1.metrics.mean(tf.nn.softmax(logits)[:, 1])}


def _summaries(o, loss, logits, global_step):
  """The cell's summary ops; returns ops the train_op must depend on."""
  kind = o.get('summary')
  deps = []
  if kind in ('v1_scalar', 'v1_both'):
    v1.summary.scalar('cell/mean_logit', tf.reduce_mean(logits))
  if kind in ('v1_hist', 'v1_both'):
    v1.summary.histogram('cell/logits', logits)
  if kind in ('v2_writer', 'v2_record_if'):
    writer = tf.summary.create_file_writer(o['model_dir'] + '/tf2_summaries')
    with tf.control_dependencies([writer.init()]):
      step = tf.identity(global_step)
    with writer.as_default():
      if kind == 'v2_record_if':
        with tf.summary.record_if(tf.equal(step % 2, 0)):
          tf.summary.scalar('v2/loss', loss, step=step)
      else:
        tf.summary.scalar('v2/loss', loss, step=step)
    writes = v1.summary.all_v2_summary_ops()
    with tf.control_dependencies(writes):
      deps = writes + [writer.flush()]
  return deps


def _host_call(loss, global_step):
  def host_fn(gs, loss_value):
    step = gs[0]
    writer = tf.compat.v2.summary.create_file_writer(HOST_DIR[0])
    with writer.as_default():
      with tf.compat.v2.summary.record_if(True):
        tf.compat.v2.summary.scalar('host/loss', loss_value[0], step=step)
      return v1.summary.all_v2_summary_ops()
  return host_fn, [tf.reshape(global_step, [1]), tf.reshape(loss, [1])]


HOST_DIR = ['']  # host_call's logdir (set per cell: model_dir/host).


def _head_spec(o, rec, features, labels, mode, logits):
  """The EstimatorSpec a tf.estimator head makes of the model's logits:
  o['head'] 'binary' (BinaryClassHead on logit 1 - logit 0, thresholds 0.3)
  or 'multi' (MultiHead of BinaryClassHead 'a' and RegressionHead 'b', one
  logit each, both fitting the labels); trained by the v1 optimizer."""
  api = o['api']
  if o['head'] == 'binary':
    head = api.BinaryClassHead(thresholds=(0.3,))
    logits = logits[:, 1:] - logits[:, :1]
  else:
    head = api.MultiHead([api.BinaryClassHead(name='a'),
                          api.RegressionHead(name='b')], head_weights=(1., .5))
    if labels is not None:
      labels = {'a': labels, 'b': tf.cast(labels, tf.float32)}

  def train_op_fn(loss):
    return _optimizer(o).minimize(loss, v1.train.get_global_step())

  spec = head.create_estimator_spec(features=features, mode=mode,
                                    logits=logits, labels=labels,
                                    train_op_fn=train_op_fn)
  if mode == 'train' and o.get('loss_hook', True):
    spec = spec._replace(training_hooks=list(spec.training_hooks) + [
        CallLog(rec['losses'], 'loss', fetch=spec.loss)])
  return spec


def model_fn_for(o, rec):
  """The cell's model_fn; rec is the cell's record (hook log, side values)."""
  api = o['api']

  def body(features, labels, mode, params, config):
    is_tpu = o.get('spec') == 'tpu'
    if o.get('init_from_checkpoint') == 'model_fn':
      v1.train.init_from_checkpoint(o['base_ckpt'], {'dense/': 'dense/'})
    logits = _linear(features, o)
    if o.get('head'):
      return _head_spec(o, rec, features, labels, mode, logits)
    if o.get('init_from_checkpoint') == 'after_variables':  # BERT's place.
      v1.train.init_from_checkpoint(o['base_ckpt'], {'dense/': 'dense/'})
    if labels is not None and o.get('labels') == 'dict':
      labels = labels['y']
    global_step = v1.train.get_global_step()
    classes = tf.argmax(logits, 1, output_type=tf.int32)
    predictions = {'classes': classes, 'probabilities': tf.nn.softmax(logits)}
    if o.get('predictions') == 'tensor':
      predictions = tf.nn.softmax(logits)
    scaffold, scaffold_fn = _scaffold(o, mode)
    ema = None
    if o.get('ema'):
      ema = v1.train.ExponentialMovingAverage(0.5)
      if mode != 'train':
        saver = v1.train.Saver(ema.variables_to_restore())
        scaffold = v1.train.Scaffold(saver=saver)
        if is_tpu:
          scaffold_fn, scaffold = (lambda: v1.train.Scaffold(saver=saver)), None
    hooks = {}
    if o.get('spec_hooks'):
      hooks = {'training_hooks': [CallLog(rec['hooks'], 'spec')],
               'evaluation_hooks': [CallLog(rec['hooks'], 'spec')],
               'prediction_hooks': [CallLog(rec['hooks'], 'spec')]}
    if mode == 'infer':
      export_outputs = None
      if o.get('export_outputs') == 'classify':
        export_outputs = {
            'serving_default': api.export.PredictOutput(predictions),
            'logits': api.export.PredictOutput({'logits': logits}),
            # Estimator skips it: classify needs one string input.
            'scores': api.export.ClassificationOutput(
                scores=tf.nn.softmax(logits))}
      kw = dict(mode=mode, predictions=predictions,
                export_outputs=export_outputs)
      if o.get('spec_hooks'):
        kw['prediction_hooks'] = hooks['prediction_hooks']
      if is_tpu:
        return api.TPUEstimatorSpec(scaffold_fn=scaffold_fn, **kw)
      return api.EstimatorSpec(scaffold=scaffold, **kw)
    loss_vec = v1.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits)
    loss = tf.reduce_mean(loss_vec)
    if o.get('nan_loss'):
      loss = loss * tf.constant(float('nan'))
    if mode == 'eval':
      kw = {}
      metrics = o.get('metrics')
      if metrics == 'v1':
        kw['eval_metric_ops'] = _v1_metrics(labels, classes, loss_vec)
      elif metrics == 'keras':
        acc = tf.keras.metrics.Accuracy(name='keras_accuracy')
        acc.update_state(labels, classes)
        kw['eval_metric_ops'] = {'keras_accuracy': acc}
      elif metrics == 'py':
        metric = PyMetric(rec['side'])
        kw['eval_metric_ops'] = {'py_accuracy': metric.ops(labels, classes)}
      elif metrics == 'host':
        kw['eval_metrics'] = (_metric_fn, [labels, logits])
      elif metrics == 'host_dict':
        kw['eval_metrics'] = (_metric_fn, {'labels': labels, 'logits': logits})
      if o.get('spec_hooks'):
        kw['evaluation_hooks'] = hooks['evaluation_hooks']
      if is_tpu:
        return api.TPUEstimatorSpec(mode, loss=loss, scaffold_fn=scaffold_fn,
                                    **kw)
      return api.EstimatorSpec(mode, loss=loss, scaffold=scaffold, **kw)
    opt = _optimizer(o)
    if is_tpu and params.get('use_tpu'):
      opt = v1.tpu.CrossShardOptimizer(opt)
    # The step's global_step, read before minimize() increments it (a TF1
    # Session orders ops by their dependencies only).
    step_read = tf.identity(global_step)
    deps = _summaries(o, loss, logits, step_read)
    with tf.control_dependencies(deps + [step_read]):
      train_op = opt.minimize(loss, global_step)
    if ema is not None:
      with tf.control_dependencies([train_op]):
        train_op = ema.apply(v1.trainable_variables())
    training_hooks = list(hooks.get('training_hooks', []))
    if o.get('loss_hook', True):
      training_hooks.append(CallLog(rec['losses'], 'loss', fetch=loss))
    if o.get('stop_hook'):
      training_hooks.append(CallLog(rec['hooks'], 'stopper', stop_at=2))
    kw = dict(mode=mode, loss=loss, train_op=train_op,
              training_hooks=training_hooks)
    if is_tpu:
      if o.get('host_call'):
        kw['host_call'] = _host_call(loss, step_read)
      return api.TPUEstimatorSpec(scaffold_fn=scaffold_fn, **kw)
    return api.EstimatorSpec(scaffold=scaffold, **kw)

  sig = o.get('signature', 'full')
  if sig == 'fl':
    return lambda features, labels: body(features, labels, 'train', {}, None)
  if sig == 'flm':
    return lambda features, labels, mode: body(features, labels, mode, {},
                                               None)
  if sig == 'flmp':
    return lambda features, labels, mode, params: body(
        features, labels, mode, params, None)
  return body


def _scaffold(o, mode):
  """(Scaffold or None, scaffold_fn or None) of the cell's scaffold axis."""
  kind = o.get('scaffold')
  if kind is None:
    return None, None
  if kind == 'init_fn':
    def make():
      saver = v1.train.Saver(v1.trainable_variables())
      return v1.train.Scaffold(
          init_fn=lambda scaffold, session: saver.restore(session,
                                                          o['base_ckpt']))
  elif kind == 'saver_keep1':
    def make():
      return v1.train.Scaffold(saver=v1.train.Saver(max_to_keep=1))
  elif kind == 'init_op_group':
    def make():
      return v1.train.Scaffold(init_op=tf.group(
          v1.global_variables_initializer(), v1.local_variables_initializer()))
  elif kind == 'init_op_assign':
    def make():
      var = [v for v in v1.global_variables() if 'dense/bias' in v.name][0]
      init = v1.global_variables_initializer()
      with tf.control_dependencies([init]):  # Else they race in a Session.
        assign = var.assign(tf.constant([.3, -.3]))
      return v1.train.Scaffold(init_op=tf.group(init, assign))
  elif kind == 'init_from_checkpoint':
    def make():
      v1.train.init_from_checkpoint(o['base_ckpt'], {'dense/': 'dense/'})
      return v1.train.Scaffold()
  else:
    raise ValueError(kind)
  if o.get('spec') == 'tpu':
    return None, make
  return make(), None
