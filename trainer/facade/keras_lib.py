"""model_to_estimator: an Estimator from a compiled Keras 2 model.

tensorflow_estimator 2.15's keras_lib on the facade: what
tf.keras.estimator.model_to_estimator (tf-keras's, which imports this
module as tensorflow_estimator.python.estimator.keras_lib) and
tf.compat.v1.keras.estimator.model_to_estimator return. The Estimator's
model_fn clones the model on its features (in the Estimator's graph, where
Keras builds v1 graph-mode models), compiles the clone against its labels
with the global step as the optimizer's iterations, and returns its total
loss, its train function's update op, its compiled metrics as
eval_metric_ops and its outputs as predictions (PredictOutput under
serving_default, plus `export_outputs`). Checkpoints hold the names TF 2.15
writes: the graph's variable names (`dense/kernel`, `training/Adam/...`) with
checkpoint_format='saver', the model's object keys
(`layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE`,
`estimator_global_step/...`) with 'checkpoint'. A Functional or Sequential
model's current weights become the first checkpoint (MODEL_DIR/keras/
keras_model.ckpt) that the Estimator warm-starts from, on the chief.
Keras's private training internals are reached in
trainer/compat/keras_estimator.py.
"""

import collections
import os
import re

import tensorflow as tf

from trainer.api import errors
from trainer.api import specs
from trainer.compat import keras_estimator as keras_internals
from trainer.facade import estimator as estimator_lib
from trainer.engines.graph import graph_replicas
from trainer.facade.export import export_output

_v1 = tf.compat.v1
_DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
ModeKeys = specs.ModeKeys


class FormattedKeyError(errors.TrainerError, KeyError):
  """A KeyError (as the reference raises) whose message keeps its newlines
  (str() is the message)."""

  def __init__(self, message):
    super().__init__(message)
    self.message = message

  def __str__(self):
    return self.message


def _missed_keys_error(order_name, order_keys, obj_name, obj_keys, missed):
  return FormattedKeyError(
      f'The dictionary passed into {obj_name} does not cover requested '
      f'{order_name} keys defined in the keras model.'
      f'\n\tExpected keys: {order_keys}'
      f'\n\t{obj_name} keys: {obj_keys}'
      f'\n\tMissed keys: {missed}')


def _cast_tensor_to_floatx(x):
  """x as Keras's floatx dtype (x itself when it already is)."""
  floatx = tf.keras.backend.floatx()
  return x if x.dtype == floatx else tf.cast(x, floatx)


def _convert_tensor(x):
  """x as a tensor (numpy arrays become constants)."""
  if not tf.is_tensor(x):
    x = _v1.convert_to_tensor_or_sparse_tensor(x)
  return x


def _any_weight_initialized(keras_model):
  """Whether the model's weights hold values (always, eagerly)."""
  if keras_model is None:
    return False
  if _v1.executing_eagerly_outside_functions():
    return True
  return any(hasattr(weight, '_keras_initialized')
             for layer in keras_model.layers for weight in layer.weights)


def _ordered_tensors(obj, key_order, obj_name, order_name):
  """obj (a tensor, a list or a dict) as a list of tensors in key_order;
  FormattedKeyError naming the keys a dict misses."""
  if obj is None:
    return None
  if isinstance(obj, (list, tuple)):
    return [_convert_tensor(x) for x in obj]
  if isinstance(obj, dict):
    missed = set(key_order) - set(obj.keys())
    if missed:
      raise _missed_keys_error(order_name, set(key_order), obj_name,
                               set(obj.keys()), missed)
    return [_convert_tensor(obj[key]) for key in key_order]
  return [_convert_tensor(obj)]


def _extract_sample_weight_tensors(features):
  """(features, sample weights) of {'features': ..., 'sample_weights': ...};
  else (features, None)."""
  if isinstance(features, dict) and set(features) == {'features',
                                                      'sample_weights'}:
    return features['features'], features['sample_weights']
  return features, None


def _convert_estimator_io_to_keras(keras_model, features, labels):
  """(input tensors, target tensors, sample weights) in the model's order:
  a features/labels dict is read by the model's input/output names
  (input_1, output_1, ... for a subclassed model)."""
  features, sample_weights = _extract_sample_weight_tensors(features)
  graph_network = keras_internals.is_graph_network(keras_model)
  input_names = output_names = None
  if isinstance(features, dict):
    input_names = (keras_model.input_names if graph_network else
                   [f'input_{i}' for i in range(1, len(features) + 1)])
  if isinstance(labels, dict):
    output_names = (keras_model.output_names if graph_network else
                    [f'output_{i}' for i in range(1, len(labels) + 1)])
  if isinstance(keras_model.inputs, dict):
    inputs = {k: _convert_tensor(features[k]) for k in keras_model.inputs}
  elif keras_model.inputs is None and isinstance(features, dict):
    inputs = {k: _convert_tensor(v) for k, v in features.items()}
  else:
    inputs = _ordered_tensors(features, input_names, 'features', 'inputs')
  targets = _ordered_tensors(labels, output_names, 'labels', 'outputs')
  return inputs, targets, sample_weights


def standardize_sample_weights(x_weight, output_names):
  """One sample-weight entry per model output (None where unweighted);
  ValueError/TypeError for a list of the wrong length, unknown keys or a
  single weight of a multi-output model."""
  if x_weight is None or (isinstance(x_weight, (list, tuple)) and
                          not x_weight):
    return [None for _ in output_names]
  if len(output_names) == 1:
    if isinstance(x_weight, (list, tuple)) and len(x_weight) == 1:
      return x_weight
    if isinstance(x_weight, dict) and output_names[0] in x_weight:
      return [x_weight[output_names[0]]]
    return [x_weight]
  if isinstance(x_weight, (list, tuple)):
    if len(x_weight) != len(output_names):
      raise ValueError(
          f'Provided `sample_weights` was a list of {len(x_weight)} '
          f'elements, but the model has {len(output_names)} outputs. You '
          'should provide one `sample_weights`array per model output.')
    return x_weight
  if isinstance(x_weight, collections.abc.Mapping):
    unknown = set(x_weight).difference(output_names)
    if unknown:
      raise ValueError(
          f'Unknown entries in sample_weights dictionary: {list(unknown)}. '
          f'Only expected following keys: {output_names}')
    return [x_weight.get(name) for name in output_names]
  raise TypeError('The model has multiple outputs, so `sample_weights` '
                  'should be either a list or a dict. Provided '
                  f'`sample_weights` type not understood: {x_weight}')


def _clone_and_build_model(mode, keras_model, custom_objects, features=None,
                           labels=None, optimizer_config=None):
  """The model cloned on the features (compiled against the labels but in
  PREDICT, its optimizer stepping the global step), in the learning phase
  of `mode`."""
  keras = keras_internals.keras()
  keras.backend.set_learning_phase(mode == ModeKeys.TRAIN)
  inputs, targets, sample_weights = _convert_estimator_io_to_keras(
      keras_model, features, labels)
  compile_clone = mode != ModeKeys.PREDICT
  global_step = None
  if compile_clone:
    global_step = _v1.train.get_or_create_global_step()
    keras_internals.track_variable(global_step)
  clone = keras_internals.clone_and_build(
      keras_model, inputs, targets, custom_objects,
      compile_clone=compile_clone, optimizer_iterations=global_step,
      optimizer_config=optimizer_config)
  if sample_weights is not None:
    keras_internals.weight_with_sample_weights(
        clone, standardize_sample_weights(sample_weights,
                                          clone.output_names))
  return clone


def _convert_keras_metrics_to_estimator(model, metric_names_map=None):
  """{name: Metric} of the metrics the model was compiled with (by
  metric_names_map's names when given: it must name each exactly once);
  None without compiled metrics."""
  metrics = keras_internals.compiled_metrics(model)
  if metrics is None:
    return None
  if not metric_names_map:
    return {m.name: m for m in metrics}
  expected = {m.name for m in metrics}
  given = set(metric_names_map)
  unknown = expected.difference(given)
  if unknown:
    raise ValueError(
        'Invalid `metric_names_map`. The following keras model metric '
        f'names:"{list(unknown)}" do not exist in the `metric_names_map` '
        'dictionary')
  extra = given.difference(expected)
  if extra:
    raise ValueError(
        'Invalid `metric_names_map`. There are unexpected keys in the '
        f'`metric_names_map` dictionary. Expected keys: {list(expected)}, '
        f'Received: {list(extra)}')
  return {metric_names_map[m.name]: m for m in metrics}


def _optimizer_config(keras_model):
  """The compiled optimizer's config, taken where the model lives (the
  model_fn runs in the Estimator's graphs); None for optimizers without
  one (tf.compat.v1 optimizers)."""
  optimizer = keras_model.optimizer
  try:
    if isinstance(optimizer, (tuple, list)):
      return [opt.get_config() for opt in optimizer]
    return optimizer.get_config()
  except (NotImplementedError, AttributeError):
    return None


def _legacy_optimizer(keras_model):
  """A new-style Keras optimizer replaced by its legacy twin (eagerly, with
  Keras's warning); ValueError in a graph, as the reference."""
  if not keras_internals.is_new_optimizer(keras_model.optimizer):
    return
  if not tf.executing_eagerly():
    raise ValueError(
        'Please set your optimizer as an instance of '
        '`tf.keras.optimizers.legacy.Optimizer`, e.g., '
        '`tf.keras.optimizers.legacy.Adam`. Received optimizer type: '
        f'{type(keras_model.optimizer)}.')
  _v1.logging.warning(
      'You are using `tf.keras.optimizers.experimental.Optimizer` in TF '
      'estimator, which only supports `tf.keras.optimizers.legacy.Optimizer`.'
      ' Automatically converting your optimizer to '
      '`tf.keras.optimizers.legacy.Optimizer`.')
  keras_model.optimizer = keras_internals.legacy_optimizer(
      keras_model.optimizer)


def _output_names(model):
  """The clone's output names; under a strategy without the `_N` suffix
  Keras gives a replica's clone, so that replicas agree."""
  if not tf.distribute.has_strategy():
    return model.output_names
  return [re.sub(r'_\d$', '', name) for name in model.output_names]


def _export_outputs(model, predictions, export_outputs):
  """serving_default's PredictOutput plus one `cls(prediction)` per
  export_outputs entry, keyed by model output name."""
  final = {_DEFAULT_SERVING_KEY: export_output.PredictOutput(predictions)}
  if export_outputs is None:
    return final
  missed = set(export_outputs) - set(model.output_names)
  if missed:
    # The reference's message, names and all.
    raise FormattedKeyError(
        f'The list passed into {model.output_names} does not cover '
        f'requested {export_outputs} keys defined in the keras model.'
        f'\n\tExpected keys: {set(export_outputs)}'
        f'\n\t{model.output_names} keys: {set(model.output_names)}'
        f'\n\tMissed keys: {missed}')
  for key, output_cls in export_outputs.items():
    final[key] = output_cls(predictions[key])
  return final


def _object_checkpoint_scaffold(model):
  """A Scaffold whose Saver writes the model's object-based checkpoint."""
  keras_internals.track_global_step(model, _v1.train.get_global_step())
  return _v1.train.Scaffold(
      saver=keras_internals.object_checkpoint_saver(model))


def _create_keras_model_fn(keras_model, custom_objects=None,
                           save_object_ckpt=False, metric_names_map=None,
                           export_outputs=None):
  """The Estimator model_fn(features, labels, mode) of keras_model."""
  _legacy_optimizer(keras_model)
  optimizer_config = _optimizer_config(keras_model)

  def model_fn(features, labels, mode):
    """model_fn of a Keras Estimator."""
    model = _clone_and_build_model(
        mode=mode, keras_model=keras_model, custom_objects=custom_objects,
        features=features, labels=labels, optimizer_config=optimizer_config)
    predictions = dict(zip(_output_names(model), model.outputs))
    loss = train_op = eval_metric_ops = None
    if mode == ModeKeys.TRAIN:
      loss, train_op = keras_internals.train_loss_and_op(model)
    elif mode == ModeKeys.EVAL:
      loss = keras_internals.test_loss(model)
    if mode != ModeKeys.PREDICT:
      eval_metric_ops = _convert_keras_metrics_to_estimator(
          model, metric_names_map)
    # model_fn must leave the model it was given as it was.
    keras_internals.restore_subclassed_state(keras_model)
    scaffold = _object_checkpoint_scaffold(model) if save_object_ckpt else None
    return specs.EstimatorSpec(
        mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=eval_metric_ops,
        export_outputs=_export_outputs(model, predictions, export_outputs),
        scaffold=scaffold)

  # Keras's v1 training exists in a TF1 graph only: under a MirroredStrategy
  # its replicas are built there, as Estimator built them.
  return graph_replicas.mark(model_fn)


def _save_first_checkpoint(keras_model, custom_objects, config,
                           save_object_ckpt):
  """MODEL_DIR/keras/keras_model.ckpt: the model's current weights (and its
  freshly made optimizer slots) as the Estimator's graph names them, unless
  a checkpoint is already there; returns the latest one there."""
  keras_model_dir = os.path.join(config.model_dir, 'keras')
  latest_path = tf.train.latest_checkpoint(keras_model_dir)
  if latest_path:
    return latest_path
  weights = (keras_model.get_weights() if _any_weight_initialized(keras_model)
             else None)
  if not _v1.gfile.IsDirectory(keras_model_dir):
    _v1.gfile.MakeDirs(keras_model_dir)
  latest_path = os.path.join(keras_model_dir, 'keras_model.ckpt')
  with tf.Graph().as_default():
    _v1.random.set_random_seed(config.tf_random_seed)
    _v1.train.create_global_step()
    model = _clone_and_build_model(ModeKeys.TRAIN, keras_model,
                                   custom_objects)
    # The train function adds the optimizer's variables to the graph: made
    # before the session, as the reference does (tensorflow#27750).
    keras_internals.make_train_function(model)
    with _v1.Session(config=config.session_config) as session:
      if weights:
        model.set_weights(weights)
      keras_internals.initialize_variables(session)
      if save_object_ckpt:
        keras_internals.track_global_step(model, _v1.train.get_global_step())
        model.save_weights(latest_path)
      else:
        _v1.train.Saver().save(session, latest_path)
  return latest_path


def _get_file_from_google_storage(keras_model_path, model_dir):
  """Downloads gs://BUCKET/OBJECT to MODEL_DIR/keras/keras_model.h5."""
  try:
    from google.cloud import storage  # pylint: disable=g-import-not-at-top
  except ImportError as e:
    raise TypeError('Could not save model to Google cloud storage; please '
                    'install `google-cloud-storage` via '
                    '`pip install google-cloud-storage`.') from e
  client = storage.Client()
  path, blob_name = os.path.split(keras_model_path)
  _, bucket_name = os.path.split(path)
  keras_model_dir = os.path.join(model_dir, 'keras')
  if not _v1.gfile.Exists(keras_model_dir):
    _v1.gfile.MakeDirs(keras_model_dir)
  file_name = os.path.join(keras_model_dir, 'keras_model.h5')
  try:
    client.get_bucket(bucket_name).blob(blob_name).download_to_filename(
        file_name)
  except Exception as e:  # pylint: disable=broad-except  (the reference's)
    raise ValueError(
        'Failed to download keras model, please check environment variable '
        'GOOGLE_APPLICATION_CREDENTIALS and model path '
        'storage.googleapis.com/{bucket}/{object}.') from e
  _v1.logging.info('Saving model to %s', file_name)
  return file_name


def _assert_valid_model(model, custom_objects=None):
  """ValueError for a subclassed model without get_config/from_config
  (cloning rebuilds it from its config); TypeError for a Keras 3 model."""
  if not keras_internals.is_keras2_model(model):
    raise TypeError(
        f'model_to_estimator takes a Keras 2 (tf-keras) model; got '
        f'{type(model).__module__}.{type(model).__name__}. On TensorFlow '
        f'{tf.__version__} build it with tf-keras: run the program with '
        '`python -m trainer.legacy` (or set TF_USE_LEGACY_KERAS=1 before '
        'TensorFlow is first imported) so that tf.keras is tf-keras.')
  keras = keras_internals.keras()
  if keras_internals.is_graph_network(model) or isinstance(
      model, keras.models.Sequential):
    return
  try:
    with keras.utils.CustomObjectScope(custom_objects or {}):
      model.__class__.from_config(model.get_config())
  except NotImplementedError as e:
    raise ValueError('Subclassed `Model`s passed to `model_to_estimator` '
                     'must implement `Model.get_config` and '
                     '`Model.from_config`.') from e


def _uses_object_checkpoints(keras_model, checkpoint_format):
  """Whether the Estimator saves object-based checkpoints (the default);
  ValueError for an unknown format or a subclassed model."""
  if checkpoint_format is None or checkpoint_format == 'checkpoint':
    keras = keras_internals.keras()
    if not (keras_internals.is_graph_network(keras_model) or
            isinstance(keras_model, keras.models.Sequential)):
      raise ValueError('Object-based checkpoints are currently not supported '
                       'with subclassed models.')
    return True
  if checkpoint_format == 'saver':
    return False
  raise ValueError('Checkpoint format must be one of "checkpoint" or '
                   f'"saver". Got {checkpoint_format}')


def _pass_session_config(keras_model, config):
  """The RunConfig's session config for Keras's own session, when no
  Keras weights exist yet (in a graph); else a warning if it sets GPU
  options Keras's session already fixed."""
  if _any_weight_initialized(keras_model):
    if config.session_config.HasField('gpu_options'):
      _v1.logging.warn(
          'The Keras backend session has already been set. The '
          '_session_config passed to model_to_estimator will not be used.')
    return
  keras_internals.keras_v1().backend.set_session(
      _v1.Session(config=config.session_config))


def model_to_estimator(keras_model=None, keras_model_path=None,
                       custom_objects=None, model_dir=None, config=None,
                       checkpoint_format=None, use_v2_estimator=False,
                       metric_names_map=None, export_outputs=None):
  """An Estimator training, evaluating, predicting and exporting a compiled
  Keras 2 model (or one saved at keras_model_path): see the module
  docstring and tf.keras.estimator.model_to_estimator."""
  if not (keras_model or keras_model_path):
    raise ValueError(
        'Either `keras_model` or `keras_model_path` needs to be provided.')
  if keras_model and keras_model_path:
    raise ValueError('Please specity either `keras_model` or '
                     '`keras_model_path`, but not both.')
  if keras_model:
    _assert_valid_model(keras_model, custom_objects)
  config = estimator_lib.maybe_overwrite_model_dir_and_session_config(
      config, model_dir)
  if not keras_model:
    if keras_model_path.startswith('gs://') or (
        'storage.googleapis.com' in keras_model_path):
      keras_model_path = _get_file_from_google_storage(keras_model_path,
                                                       config.model_dir)
    _v1.logging.info('Loading models from %s', keras_model_path)
    keras_model = keras_internals.keras().models.load_model(keras_model_path)
  else:
    _v1.logging.info('Using the Keras model provided.')
  save_object_ckpt = _uses_object_checkpoints(keras_model, checkpoint_format)
  if not getattr(keras_model, 'optimizer', None):
    raise ValueError('The given keras model has not been compiled yet. '
                     'Please compile the model with `model.compile()` '
                     'before calling `model_to_estimator()`.')
  keras_model_fn = _create_keras_model_fn(
      keras_model, custom_objects, save_object_ckpt, metric_names_map,
      export_outputs)
  _pass_session_config(keras_model, config)
  warm_start_path = None
  if keras_internals.is_graph_network(keras_model) and config.is_chief:
    warm_start_path = _save_first_checkpoint(keras_model, custom_objects,
                                             config, save_object_ckpt)
  elif keras_model.built:
    _v1.logging.warn(
        'You are creating an Estimator from a Keras model manually '
        'subclassed from `Model`, that was already called on some inputs '
        '(and thus already had weights). We are currently unable to '
        "preserve the model's state (its weights) as part of the estimator "
        'in this case. Be warned that the estimator has been created using '
        'a freshly initialized version of your model.\nNote that this '
        "doesn't affect the state of the model instance you passed as "
        '`keras_model` argument.')
  estimator_cls = (estimator_lib.EstimatorV2 if use_v2_estimator
                   else estimator_lib.Estimator)
  return estimator_cls(keras_model_fn, config=config,
                       warm_start_from=warm_start_path)
