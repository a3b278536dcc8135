"""SessionRunHooks the graph engine adds, as Estimator and TPUEstimator do."""

import tensorflow as tf


class DatasetInitializerHook(tf.compat.v1.train.SessionRunHook):
  """Initialises the iterator of an input_fn's Dataset when the session
  starts (Estimator makes an initializable iterator of it)."""

  def __init__(self, iterator):
    self._iterator = iterator
    self._initializer = None

  def begin(self):
    self._initializer = self._iterator.initializer

  def after_create_session(self, session, coord):
    del coord
    session.run(self._initializer)


class ExamplesPerSecondHook(tf.compat.v1.train.StepCounterHook):
  """TPUEstimator's StepCounterHook: logs and records global_step/sec and
  examples/sec (global_step/sec times the global batch)."""

  def __init__(self, batch_size, every_n_steps=100, every_n_secs=None,
               output_dir=None, summary_writer=None):
    self._batch_size = batch_size
    super().__init__(every_n_steps=every_n_steps, every_n_secs=every_n_secs,
                     output_dir=output_dir, summary_writer=summary_writer)

  def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
    steps_per_sec = elapsed_steps / elapsed_time
    examples_per_sec = (self._batch_size or 0) * steps_per_sec
    if self._summary_writer is not None:
      for tag, value in (('global_step/sec', steps_per_sec),
                         ('examples/sec', examples_per_sec)):
        self._summary_writer.add_summary(
            tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(
                tag=tag, simple_value=value)]), global_step)
    tf.compat.v1.logging.info('global_step/sec: %g', steps_per_sec)
    tf.compat.v1.logging.info('examples/sec: %g', examples_per_sec)
