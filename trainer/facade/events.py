"""Scalar summaries read back from event files, as Estimator's tools do."""

import tensorflow as tf


def scalar_events(path):
  """Yields (step, {tag: value}) of each event of the event file `path`
  that holds scalar (simple_value) summaries, in file order."""
  for event in tf.compat.v1.train.summary_iterator(path):
    values = {value.tag: value.simple_value for value in event.summary.value
              if value.HasField('simple_value')}
    if values:
      yield event.step, values
