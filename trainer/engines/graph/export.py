"""Estimator's SavedModel export in TF1 graphs, as tf.estimator does it.

export_all(program, export_dir_base, {mode: receiver_fn}, ...) writes one
SavedModel under export_dir_base/TIMESTAMP (built in a temporary directory,
renamed when complete) with a meta graph per mode, TRAIN, EVAL then PREDICT
(tags train / eval / serve): each graph calls the receiver fn, the model_fn
in that mode and builds the signatures of its export outputs (PREDICT: the
spec's export_outputs; TRAIN/EVAL: loss, predictions, metrics). The first
graph restores the checkpoint (the given one, else model_dir's latest, else
the warm start's) through the spec's Scaffold saver and saves the variables;
the others add their meta graph only. assets_extra files are copied to
assets.extra/. Returns the export directory (bytes).

A TPUEstimator exports as TPUEstimator does: the CPU graphs
(export_to_cpu) and, after the PREDICT one, the TPU inference graph (tags
serve, tpu; export_to_tpu): with export_saved_model_api_version 1 the
model_fn rewritten for one TPU core inside a TPUPartitionedCall
(graph/tpu_inference.py), with 2 the model_fn called with
params['use_tpu'] True to do that itself. It is built on any machine and
served on a TPU host.
"""

import os

import tensorflow as tf

from trainer.api import specs
from trainer.compat import tf_private
from trainer.compat import tpu_rewrite as compat_tpu_inference
from trainer.engines.graph import program as program_lib
from trainer.engines.graph import tpu_export as tpu_inference
from trainer.guard import checkpoint_fit

_v1 = tf.compat.v1
# The mode of a TPUEstimator's TPU inference graph (TPUEstimator's name).
_TPU_INFERENCE = '_inference_on_tpu'


def _checkpoint_to_export(program, checkpoint_path):
  if checkpoint_path:
    return checkpoint_path
  checkpoint_path = tf.train.latest_checkpoint(program.model_dir)
  if checkpoint_path:
    return checkpoint_path
  if program.warm_start:
    path = program.warm_start.ckpt_to_initialize_from
    if _v1.gfile.IsDirectory(path):
      path = tf.train.latest_checkpoint(path)
    return path
  raise ValueError(f"Couldn't find trained model at {program.model_dir}.")


def export_all(program, export_dir_base, input_receiver_fn_map,
               assets_extra=None, as_text=False, checkpoint_path=None,
               strip_default_attrs=True):
  """The SavedModel's directory (bytes); see the module docstring."""
  with tf_private.graph_mode():
    return _export_all(program, export_dir_base, input_receiver_fn_map,
                       assets_extra, as_text, checkpoint_path,
                       strip_default_attrs)


def _missing_directories(path):
  """path and those of its parents that do not exist yet, deepest first."""
  missing = []
  path = tf.compat.as_str(path).rstrip('/')
  while path and not _v1.gfile.Exists(path):
    missing.append(path)
    parent = os.path.dirname(path)
    if parent == path:
      break
    path = parent
  return missing


def _export_all(program, export_dir_base, input_receiver_fn_map,
                assets_extra, as_text, checkpoint_path, strip_default_attrs):
  checkpoint_path = _checkpoint_to_export(program, checkpoint_path)
  utils = tf_private.export_utils()
  export_dir = utils.get_timestamped_export_dir(export_dir_base)
  temp_dir = utils.get_temp_export_dir(export_dir)
  made = _missing_directories(export_dir_base)
  try:
    _build(program, temp_dir, input_receiver_fn_map, assets_extra, as_text,
           checkpoint_path, strip_default_attrs)
  except BaseException:
    if _v1.gfile.Exists(temp_dir):  # Never leave a half-written export.
      _v1.gfile.DeleteRecursively(temp_dir)
    for directory in made:  # Nor the directories made for it, if empty.
      if _v1.gfile.IsDirectory(directory) and not _v1.gfile.ListDirectory(
          directory):
        _v1.gfile.DeleteRecursively(directory)
    raise
  _v1.gfile.Rename(temp_dir, export_dir)
  return export_dir


def _build(program, temp_dir, input_receiver_fn_map, assets_extra, as_text,
           checkpoint_path, strip_default_attrs):
  """Writes the whole SavedModel into temp_dir."""
  builder = _v1.saved_model.Builder(temp_dir)
  save_variables = True
  for mode in (specs.ModeKeys.TRAIN, specs.ModeKeys.EVAL,
               specs.ModeKeys.PREDICT):
    if input_receiver_fn_map.get(mode):
      _add_meta_graph(program, builder, input_receiver_fn_map[mode],
                      checkpoint_path, save_variables, mode,
                      strip_default_attrs)
      save_variables = False
  if save_variables:
    raise ValueError(f'No valid modes for exporting found. Got '
                     f'{input_receiver_fn_map.keys()}.')
  tf_private.save_builder(builder, as_text)
  if assets_extra:
    extra = os.path.join(tf.compat.as_bytes(temp_dir),
                         tf.compat.as_bytes('assets.extra'))
    for relative, source in assets_extra.items():
      target = os.path.join(extra, tf.compat.as_bytes(relative))
      _v1.gfile.MakeDirs(os.path.dirname(target))
      _v1.gfile.Copy(source, target)


def _add_meta_graph(program, builder, receiver_fn, checkpoint_path,
                    save_variables, mode, strip_default_attrs):
  """The mode's meta graph, restored from the checkpoint (so a graph with a
  variable the checkpoint lacks fails), saving the variables if
  save_variables; for a TPUEstimator, as it exports: the CPU graph
  (export_to_cpu) and, in PREDICT, the TPU inference graph (export_to_tpu),
  which restores and saves the variables only without the CPU graph."""
  tpu = program.tpu
  if tpu is None:
    _add_graph(program, builder, receiver_fn, checkpoint_path, True,
               save_variables, mode, strip_default_attrs)
    return
  if tpu.export_to_tpu and mode != specs.ModeKeys.PREDICT:
    _v1.logging.warn(
        'TPUEstimator only handles mode PREDICT for exporting when '
        f'`export_to_tpu` is `True`; Mode {mode} will be ignored for TPU.')
  if not tpu.export_to_cpu and not tpu.export_to_tpu:
    raise ValueError('One of export_to_cpu and export_to_tpu must be true.')
  if tpu.export_to_cpu:
    _add_graph(program, builder, receiver_fn, checkpoint_path, True,
               save_variables, mode, strip_default_attrs)
  if tpu.export_to_tpu and mode == specs.ModeKeys.PREDICT:
    restore = not tpu.export_to_cpu
    _add_graph(program, builder, receiver_fn, checkpoint_path, restore,
               restore, _TPU_INFERENCE, strip_default_attrs)


def _call_model_fn(program, receiver, mode):
  labels = getattr(receiver, 'labels', None)
  if mode != _TPU_INFERENCE:
    return program.call_model_fn(receiver.features, labels, mode,
                                 export=True)
  with compat_tpu_inference.inference_context():
    if program.tpu.export_api_version == 1:
      return tpu_inference.model_fn_on_tpu(
          lambda features: program.call_model_fn(
              features, labels, specs.ModeKeys.PREDICT, export=True),
          receiver.features)
    return program.call_model_fn(receiver.features, labels,
                                 specs.ModeKeys.PREDICT, export=True,
                                 use_tpu=True)


def _add_graph(program, builder, receiver_fn, checkpoint_path, restore,
               save_variables, mode, strip_default_attrs):
  """Adds one meta graph: mode's (tags by EXPORT_TAG_MAP) or _TPU_INFERENCE
  (tags serve, tpu); restores the checkpoint first when `restore`."""
  utils = tf_private.export_utils()
  if mode == _TPU_INFERENCE:
    tags = [tf.saved_model.SERVING, tf.saved_model.TPU]
  else:
    tags = utils.EXPORT_TAG_MAP[mode]
  graph = program_lib.new_graph(program)
  with graph.as_default():
    program_lib.create_global_step(program, graph)
    receiver = receiver_fn()
    spec = _call_model_fn(program, receiver, mode)
    export_outputs = utils.export_outputs_for_mode(
        mode=spec.mode, serving_export_outputs=spec.export_outputs,
        predictions=spec.predictions, loss=spec.loss,
        metrics=spec.eval_metric_ops)
    signatures = utils.build_all_signature_defs(
        receiver.receiver_tensors, export_outputs,
        getattr(receiver, 'receiver_tensors_alternatives', None),
        serving_only=(spec.mode == specs.ModeKeys.PREDICT))
    with _v1.Session(config=program.session_config) as session:
      local_init_op = (spec.scaffold.local_init_op or
                       _v1.train.Scaffold.default_local_init_op())
      saver = spec.scaffold.saver
      if isinstance(saver, tf.train.Checkpoint):
        saver = tf_private.saver_for_checkpoint(saver)
      saver = saver or _v1.train.Saver(sharded=True)
      if restore:
        checkpoint_fit.check_saver(saver, checkpoint_path)
        try:
          saver.restore(session, checkpoint_path)
        except tf.errors.NotFoundError as e:
          raise ValueError(
              'Could not load all requested variables from checkpoint. '
              'Please make sure your model_fn does not expect variables '
              'that were not saved in the checkpoint.\n\nEncountered error '
              f'with mode `{mode}` while restoring checkpoint from: '
              f'`{checkpoint_path}`. Full Traceback:\n\n{e}') from e
      tf_private.add_train_op_to_builder(builder, spec.train_op)
      kwargs = dict(
          tags=tags, signature_def_map=signatures,
          assets_collection=_v1.get_collection(
              _v1.GraphKeys.ASSET_FILEPATHS),
          main_op=local_init_op, saver=saver,
          strip_default_attrs=strip_default_attrs)
      if save_variables:
        builder.add_meta_graph_and_variables(session, **kwargs)
      else:
        builder.add_meta_graph(**kwargs)
