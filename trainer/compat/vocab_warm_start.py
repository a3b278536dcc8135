"""Warm-starting a vocabulary-keyed variable, under the tf2 runner.

WarmStartSettings(var_name_to_vocab_info=...) remaps the rows (or columns)
of a checkpoint's embedding to a new vocabulary: TF's warm_starting_util
builds the remapped initial value with TF's own load-and-remap op and its
backup initializer for new entries, then, in a TF1 graph, makes it the
variable's initializer. The tf2 runner's variables already exist: called
eagerly (the runner builds a Scaffold eagerly, before it restores any
checkpoint of model_dir, which then wins, as in Estimator), the same TF
function assigns the remapped value at once. This is the one module that
reaches that private function.
"""

# pylint: disable=g-direct-tensorflow-import
from tensorflow.python.training import warm_starting_util as _warm_starting
# pylint: enable=g-direct-tensorflow-import


def warm_start_var_with_vocab(variable, ckpt, vocab_info, prev_tensor_name):
  """Initialises `variable` from checkpoint `ckpt`'s `prev_tensor_name`
  (None: the variable's own name) remapped by `vocab_info` (a VocabInfo)."""
  _warm_starting._warm_start_var_with_vocab(  # pylint: disable=protected-access
      variable, current_vocab_path=vocab_info.new_vocab,
      current_vocab_size=vocab_info.new_vocab_size, prev_ckpt=ckpt,
      prev_vocab_path=vocab_info.old_vocab,
      previous_vocab_size=vocab_info.old_vocab_size,
      current_oov_buckets=vocab_info.num_oov_buckets,
      prev_tensor_name=prev_tensor_name,
      initializer=vocab_info.backup_initializer, axis=vocab_info.axis)
