"""Private TF internals the trainer.legacy facade relies on, in one place.

  * the export output classes (`PredictOutput`, ...): TF core's own, the very
    classes tf.estimator.export re-exported up to 2.15;
  * `SecondOrStepTimer` and `NanLossDuringTrainingError` of TF core's
    basic_session_run_hooks (tf.estimator re-exported them);
  * the configuration TF's standard SessionRunHooks keep in private fields
    (the cadence and listeners of a CheckpointSaverHook, the last step of a
    StopAtStepHook), so the tf2 runner and the facade can honour them
    without a Session;
  * gfile.ListDirectory looked up on TF's platform module at each call
    (Estimator's gc lists export directories so, and its tests mock it);
  * eager execution as a context (`context.eager_mode()`) and whether
    control flow v2 is on: a program that disabled TF2 behaviour gets it
    back for the facade's tf2-runner calls only;
  * TF's FileWriter class, which the facade's FakeSummaryWriter replaces
    while installed (a run-time patch of TF, as tensorflow_estimator's
    fake_summary_writer does), and test_util's meta graph comparison.
These have not changed from TF 2.15 to 2.21; tests/facade/api_test.py
reads each on every lane.
"""

# pylint: disable=g-direct-tensorflow-import,protected-access
from tensorflow.python.eager import context
from tensorflow.python.ops import control_flow_util
from tensorflow.python.platform import gfile
from tensorflow.python.saved_model.model_utils import export_output
from tensorflow.python.training import basic_session_run_hooks

ExportOutput = export_output.ExportOutput
ClassificationOutput = export_output.ClassificationOutput
RegressionOutput = export_output.RegressionOutput
PredictOutput = export_output.PredictOutput
EvalOutput = export_output.EvalOutput
SecondOrStepTimer = basic_session_run_hooks.SecondOrStepTimer
NanLossDuringTrainingError = basic_session_run_hooks.NanLossDuringTrainingError


def timer_cadence(timer):
  """(every_steps, every_secs) of a SecondOrStepTimer; (None, None) if never."""
  return (getattr(timer, '_every_steps', None),
          getattr(timer, '_every_secs', None))


def stop_hook_config(hook):
  """(num_steps, last_step) of a StopAtStepHook (one of them is None)."""
  return hook._num_steps, hook._last_step


def saver_hook_config(hook):
  """{dir, every_steps, every_secs, listeners, saver, scaffold} of a
  CheckpointSaverHook."""
  steps, secs = timer_cadence(hook._timer)
  return {'dir': hook._checkpoint_dir, 'every_steps': steps,
          'every_secs': secs, 'listeners': list(hook._listeners),
          'saver': hook._saver, 'scaffold': hook._scaffold}


def add_saver_listener(hook, listener):
  """Attaches a CheckpointSaverListener to a CheckpointSaverHook (once), as
  Estimator attaches train()'s saving_listeners."""
  if listener not in hook._listeners:
    hook._listeners.append(listener)


def eager_mode():
  """A context running eagerly, even where the program disabled eager
  execution (what tf.distribute needs)."""
  return context.eager_mode()


def control_flow_v2_enabled():
  return control_flow_util.ENABLE_CONTROL_FLOW_V2


def list_directory(path):
  """gfile.ListDirectory(path), as the platform module has it now."""
  return gfile.ListDirectory(path)


def file_writer_class():
  """The FileWriter TF's summary writer module uses now."""
  from tensorflow.python.summary.writer import writer  # pylint: disable=g-import-not-at-top
  return writer.FileWriter


def replace_file_writer(cls):
  """Makes `cls` TF's FileWriter, FileWriterCache's included."""
  from tensorflow.python.summary.writer import writer  # pylint: disable=g-import-not-at-top
  from tensorflow.python.summary.writer import writer_cache  # pylint: disable=g-import-not-at-top
  writer.FileWriter = writer_cache.FileWriter = cls


def assert_meta_graph_protos_equal(test_case, expected, actual):
  """test_util's check that two MetaGraphDefs are equal, with test_case."""
  from tensorflow.python.framework import test_util  # pylint: disable=g-import-not-at-top
  test_util.assert_meta_graph_protos_equal(test_case, expected, actual)
