"""LinearSDCA's preconditions raise a ValueError naming what to change
(assert statements before: stripped under python -O, the model then built
with what SDCA cannot train)."""

import pytest
import tensorflow as tf

from tests import testutil

pytestmark = testutil.facade_lanes


def test_sdca_refuses_a_combiner_other_than_sum():
  from trainer.facade.canned import linear  # pylint: disable=g-import-not-at-top
  linear._check_sdca_combiner('sum')  # pylint: disable=protected-access
  with pytest.raises(ValueError, match="sparse_combiner='mean'"):
    linear._check_sdca_combiner('mean')  # pylint: disable=protected-access


def test_sdca_refuses_a_regression_head_of_two_dimensions():
  from trainer.facade.canned import linear  # pylint: disable=g-import-not-at-top
  assert linear._sdca_loss_type(  # pylint: disable=protected-access
      tf.estimator.RegressionHead()) == 'squared_loss'
  with pytest.raises(ValueError, match='this head has 2'):
    linear._sdca_loss_type(  # pylint: disable=protected-access
        tf.estimator.RegressionHead(label_dimension=2))

