"""The head canned classifiers build, and the helpers tensorflow_estimator's
head tests import from this module (head_utils ships them)."""

import tensorflow as tf

from trainer.facade.head import binary_class_head
from trainer.facade.head import multi_class_head

_DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


def binary_or_multi_class_head(n_classes, weight_column, label_vocabulary,
                               loss_reduction):
  """BinaryClassHead for n_classes == 2, else MultiClassHead(n_classes)."""
  if n_classes == 2:
    return binary_class_head.BinaryClassHead(
        weight_column=weight_column, label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction)
  return multi_class_head.MultiClassHead(
      n_classes, weight_column=weight_column,
      label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)


def _initialize_variables(test_case, scaffold):
  """Finalizes `scaffold` and runs its init, local-init and ready ops in the
  test's default session (asserting it has no init feed or init_fn)."""
  scaffold.finalize()
  test_case.assertIsNone(scaffold.init_feed_dict)
  test_case.assertIsNone(scaffold.init_fn)
  scaffold.init_op.run()
  scaffold.ready_for_local_init_op.eval()
  scaffold.local_init_op.run()
  scaffold.ready_op.eval()
  test_case.assertIsNotNone(scaffold.saver)


def _assert_simple_summaries(test_case, expected_summaries, summary_str,
                             tol=1e-6):
  """Asserts the serialized Summary holds exactly {tag: simple_value}."""
  summary = tf.compat.v1.summary.Summary()
  summary.ParseFromString(summary_str)
  test_case.assertAllClose(
      expected_summaries, {v.tag: v.simple_value for v in summary.value},
      rtol=tol, atol=tol)


def _assert_no_hooks(test_case, spec):
  test_case.assertAllEqual([], spec.training_chief_hooks)
  test_case.assertAllEqual([], spec.training_hooks)
