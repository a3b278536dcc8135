"""Estimator's SavedModel export in TF1 graphs, as tf.estimator does it:
the pieces Estimator._export_all_saved_models and _add_meta_graph_for_mode
(trainer/facade/estimator.py) put together.

saved_model_builder(export_dir_base, as_text, assets_extra) gives a
SavedModel Builder writing into a temporary directory beside
export_dir_base/TIMESTAMP; when the block ends without error the builder
saves, the assets_extra files are copied to assets.extra/ and the directory
is renamed into place; on an error the temporary directory is removed
(never a half-written export). add_meta_graph() adds one meta graph of a
spec built in the default graph: its signatures (PREDICT: the spec's
export_outputs; TRAIN/EVAL: loss, predictions, metrics), restored from the
checkpoint through the spec's Scaffold saver (check_variables: a graph with
a variable the checkpoint lacks fails) and saving the variables with it
(save_variables). tags(mode): a mode's meta graph tags (train, eval, serve).
"""

import contextlib
import os

import tensorflow as tf

from trainer.api import specs
from trainer.compat import tf_private
from trainer.guard import checkpoint_fit

_v1 = tf.compat.v1


def tags(mode):
  """The meta graph tags Estimator exports `mode` with."""
  return tf_private.export_utils().EXPORT_TAG_MAP[mode]


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


@contextlib.contextmanager
def saved_model_builder(export_dir_base, as_text=False, assets_extra=None):
  """(builder, export directory as bytes) of a new SavedModel (see the
  module docstring)."""
  utils = tf_private.export_utils()
  export_dir = utils.get_timestamped_export_dir(export_dir_base)
  temp_dir = utils.get_temp_export_dir(export_dir)
  made = _missing_directories(export_dir_base)
  try:
    builder = _v1.saved_model.Builder(temp_dir)
    yield builder, export_dir
    tf_private.save_builder(builder, as_text)
    if assets_extra:
      extra = os.path.join(tf.compat.as_bytes(temp_dir),
                           tf.compat.as_bytes('assets.extra'))
      for relative, source in assets_extra.items():
        target = os.path.join(extra, tf.compat.as_bytes(relative))
        _v1.gfile.MakeDirs(os.path.dirname(target))
        _v1.gfile.Copy(source, target)
  except BaseException:
    if _v1.gfile.Exists(temp_dir):  # Never leave a half-written export.
      _v1.gfile.DeleteRecursively(temp_dir)
    for directory in made:  # Nor the directories made for it, if empty.
      if _v1.gfile.IsDirectory(directory) and not _v1.gfile.ListDirectory(
          directory):
        _v1.gfile.DeleteRecursively(directory)
    raise
  _v1.gfile.Rename(temp_dir, export_dir)


def add_meta_graph(builder, spec, receiver, mode, export_tags,
                   checkpoint_path, save_variables, check_variables,
                   strip_default_attrs, session_config):
  """Adds to `builder` the meta graph of `spec` and `receiver`, built in
  the default graph for `mode` (see the module docstring)."""
  utils = tf_private.export_utils()
  export_outputs = utils.export_outputs_for_mode(
      mode=spec.mode, serving_export_outputs=spec.export_outputs,
      predictions=spec.predictions, loss=spec.loss,
      metrics=spec.eval_metric_ops)
  signatures = utils.build_all_signature_defs(
      receiver.receiver_tensors, export_outputs,
      getattr(receiver, 'receiver_tensors_alternatives', None),
      serving_only=(mode == specs.ModeKeys.PREDICT))
  with _v1.Session(config=session_config) as session:
    local_init_op = (spec.scaffold.local_init_op or
                     _v1.train.Scaffold.default_local_init_op())
    saver = spec.scaffold.saver
    if isinstance(saver, tf.train.Checkpoint):
      saver = tf_private.saver_for_checkpoint(saver)
    saver = saver or _v1.train.Saver(sharded=True)
    if save_variables and not check_variables:
      raise ValueError('If `save_variables` is `True, `check_variables`'
                       'must not be `False`.')
    if check_variables:
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
        tags=export_tags, signature_def_map=signatures,
        assets_collection=_v1.get_collection(_v1.GraphKeys.ASSET_FILEPATHS),
        main_op=local_init_op, saver=saver,
        strip_default_attrs=strip_default_attrs)
    if save_variables:
      builder.add_meta_graph_and_variables(session, **kwargs)
    else:
      builder.add_meta_graph(**kwargs)
