"""eval_graph's probe for variables an evaluation would make: a replica
thread's NewVariableError, reported to MirroredStrategy's Coordinator, is
not logged as an error (the launcher's own filter of those reports runs
too), and any other report still is."""

import logging

import pytest
import tensorflow as tf

from trainer.engines.tf2 import eval_graph
from trainer.runtime import startup


class _Records(logging.Handler):

  def __init__(self):
    super().__init__()
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())


@pytest.fixture
def records():
  logger = tf.get_logger()
  handler, tracebacks = _Records(), startup._CoordinatorTracebacks()  # pylint: disable=protected-access
  logger.addHandler(handler)
  logger.addFilter(tracebacks)  # As the launcher's prepare_program adds it.
  level = logger.level
  logger.setLevel(logging.INFO)
  yield handler.messages
  logger.setLevel(level)
  logger.removeFilter(tracebacks)
  logger.removeHandler(handler)


def _report(error):
  """What tf.train.Coordinator.request_stop logs for a replica's error."""
  try:
    raise error
  except Exception as e:  # pylint: disable=broad-except
    tf.compat.v1.logging.info('Error reported to Coordinator: %s', str(e),
                              exc_info=(type(e), e, e.__traceback__))


def test_the_probes_refusal_is_not_reported(records):
  with eval_graph.no_new_variables():
    _report(eval_graph.NewVariableError('global_step/'))
    with pytest.raises(eval_graph.NewVariableError, match='global_step'):
      tf.Variable(1.0, name='global_step')
  assert not records, records


def test_other_reports_still_are(records):
  with eval_graph.no_new_variables():
    _report(ValueError('a real failure'))
  _report(eval_graph.NewVariableError('outside the probe'))
  assert records == ['Error reported to Coordinator: a real failure',
                     'Error reported to Coordinator: outside the probe']
