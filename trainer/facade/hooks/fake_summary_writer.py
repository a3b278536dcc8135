"""A FileWriter stand-in that records what is written, for hook tests.

tensorflow_estimator shipped one (hooks/fake_summary_writer.py) that its own
and users' hook tests import; TF core has none. `FakeSummaryWriter.install()`
makes TF's FileWriter (and FileWriterCache's) this class until
`uninstall()`; an instance keeps the summaries by step, the graphs, meta
graphs, session logs and run metadata it was given, and
`assert_summaries(test_case, ...)` checks them.
"""

from tensorflow.core.framework import summary_pb2  # pylint: disable=g-direct-tensorflow-import

from trainer.compat import facade_private


def _check_step(global_step):
  if global_step is not None and global_step < 0:
    raise ValueError(f'Invalid global_step {global_step}.')


class FakeSummaryWriter:
  """Records summaries instead of writing event files (see module doc)."""

  _replaced_summary_writer = None  # TF's FileWriter while installed.

  @classmethod
  def install(cls):
    if cls._replaced_summary_writer is not None:
      raise ValueError('FakeSummaryWriter already installed.')
    cls._replaced_summary_writer = facade_private.file_writer_class()
    facade_private.replace_file_writer(cls)

  @classmethod
  def uninstall(cls):
    if cls._replaced_summary_writer is None:
      raise ValueError('FakeSummaryWriter not installed.')
    facade_private.replace_file_writer(cls._replaced_summary_writer)
    cls._replaced_summary_writer = None

  def __init__(self, logdir, graph=None):
    self._logdir = logdir
    self._graph = graph
    self._summaries = {}
    self._added_graphs = []
    self._added_meta_graphs = []
    self._added_session_logs = []
    self._added_run_metadata = {}

  @property
  def summaries(self):
    """{global step: [Summary protos added at that step]}."""
    return self._summaries

  def assert_summaries(self, test_case, expected_logdir=None,
                       expected_graph=None, expected_summaries=None,
                       expected_added_graphs=None,
                       expected_added_meta_graphs=None,
                       expected_session_logs=None):
    """Asserts with test_case what was given; expected_summaries maps a
    step to {tag: simple_value} (global_step/sec, written by a timer, is
    left out)."""
    if expected_logdir is not None:
      test_case.assertEqual(expected_logdir, self._logdir)
    if expected_graph is not None:
      test_case.assertIs(expected_graph, self._graph)
    for step, expected in (expected_summaries or {}).items():
      test_case.assertIn(step, self._summaries,
                         f'Missing step {step} from {self._summaries.keys()}.')
      values = {value.tag: value.simple_value
                for summary in self._summaries[step]
                for value in summary.value
                if value.tag != 'global_step/sec'}
      test_case.assertEqual(expected, values)
    if expected_added_graphs is not None:
      test_case.assertEqual(expected_added_graphs, self._added_graphs)
    if expected_added_meta_graphs is not None:
      test_case.assertEqual(len(expected_added_meta_graphs),
                            len(self._added_meta_graphs))
      for expected, actual in zip(expected_added_meta_graphs,
                                  self._added_meta_graphs):
        facade_private.assert_meta_graph_protos_equal(test_case, expected,
                                                      actual)
    if expected_session_logs is not None:
      test_case.assertEqual(expected_session_logs, self._added_session_logs)

  def add_summary(self, summ, current_global_step):
    if isinstance(summ, bytes):
      summ = summary_pb2.Summary.FromString(summ)
    self._summaries.setdefault(current_global_step, []).append(summ)

  def add_graph(self, graph, global_step=None, graph_def=None):
    _check_step(global_step)
    if graph_def is not None:
      raise ValueError(f'Unexpected graph_def {graph_def}.')
    self._added_graphs.append(graph)

  def add_meta_graph(self, meta_graph_def, global_step=None):
    _check_step(global_step)
    self._added_meta_graphs.append(meta_graph_def)

  def add_session_log(self, session_log, global_step=None):
    del global_step  # Written by timers: not deterministic.
    self._added_session_logs.append(session_log)

  def add_run_metadata(self, run_metadata, tag, global_step=None):
    _check_step(global_step)
    self._added_run_metadata[tag] = run_metadata

  def flush(self):
    pass

  def reopen(self):
    pass

  def close(self):
    pass
