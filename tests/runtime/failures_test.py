"""trainer/runtime/failures.py in-process: which line a failure gets and
when its traceback follows; tf_config's TF_CONFIG problems and the port
probe (the end-to-end runs are tests/faults/estimator_api_test.py and
cluster_config_test.py)."""

import importlib.util
import json
import socket

import pytest

from trainer.api import errors
from trainer.guard import failure_parts
from trainer.runtime import failures
from trainer.runtime import tf_config

LAUNCHER = failures.Where('launcher')


def _raised(fn):
  try:
    fn()
  except Exception as e:  # pylint: disable=broad-except
    return e
  raise AssertionError('nothing raised')


def _their_module(tmp_path, source):
  path = tmp_path / 'their_model.py'
  path.write_text(source)
  spec = importlib.util.spec_from_file_location('their_model', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module, str(path)


def test_the_users_own_exception_names_its_file_and_line_then_traceback(
    tmp_path):
  module, path = _their_module(tmp_path, (
      'def model_fn(features):\n'
      '  raise ValueError(f"no column {features!r}")\n'))
  report = failures.report(_raised(lambda: module.model_fn('x2')),
                           failures.Where('launcher', program=path))
  assert report.line == "ValueError raised at their_model.py:2 in model_fn: " \
      "no column 'x2'"
  assert report.traceback.startswith('Traceback (most recent call last):')
  # From the program's first frame: not this test's.
  assert 'failures_test.py' not in report.traceback
  assert report.traceback.rstrip().endswith("ValueError: no column 'x2'")


def test_an_error_inside_a_library_names_where_the_users_code_called_it(
    tmp_path):
  module, _ = _their_module(tmp_path, (
      'import json\n'
      'def input_fn(text):\n'
      '  return json.loads(text)\n'))
  report = failures.report(_raised(lambda: module.input_fn('{x')), LAUNCHER)
  assert report.line.startswith('JSONDecodeError: Expecting property name')
  assert report.line.endswith('(called from their_model.py:3 in input_fn)')
  assert 'Traceback' in report.traceback


def test_a_trainer_error_is_its_message_alone(monkeypatch):
  class Refused(errors.TrainerError, ValueError):
    pass

  error = _raised(lambda: (_ for _ in ()).throw(Refused('--flag=1: no.')))
  monkeypatch.delenv(failures.TRACEBACK_ENV, raising=False)
  assert failures.report(error, LAUNCHER) == failures.Report('--flag=1: no.')
  monkeypatch.setenv(failures.TRACEBACK_ENV, '1')
  assert 'Traceback' in failures.report(error, LAUNCHER).traceback


def test_an_error_raised_from_a_trainer_error_is_the_apis():
  """The facade raises Estimator's own types from the project's (a NaN
  loss): the entry of that type speaks, not the project's wording."""

  class NanLossDuringTrainingError(RuntimeError):
    pass

  def facade():
    try:
      raise errors.TrainerError('Loss is nan at step 3: lower --lr.')
    except errors.TrainerError as e:
      raise NanLossDuringTrainingError('NaN loss during training.') from e

  line = failures.report(_raised(facade), LAUNCHER).line
  assert line.startswith('Loss is nan at step 3: training stopped.'), line
  assert '--lr' not in line and 'lower the learning rate' in line


def test_noted_facts_leave_the_exception_unchanged():
  error = ValueError('x')
  failure_parts.note(error, step=7)
  assert failure_parts.noted(error, 'step') == 7
  assert str(error) == 'x' and type(error) is ValueError  # pylint: disable=unidiomatic-typecheck


def test_summary_keeps_the_cause_of_a_graph_error():
  message = ('Graph execution error:\n\nDetected at node foo defined at '
             '(most recent call last):\n  File "x.py", line 1, in f\n'
             "Node: 'foo'\nassertion failed: [Labels must be <= n_classes - 1]"
             '\n\t [[{{node foo}}]]')
  assert failure_parts.summary(message) == (
      'assertion failed: [Labels must be <= n_classes - 1]')


@pytest.mark.parametrize('raw,expected', [
    ('{cluster: chief}', 'TF_CONFIG is not valid JSON (Expecting property '
     "name enclosed in double quotes at character 1 of '{cluster: chief}')"),
    ('[1]', "TF_CONFIG is '[1]', not a JSON object"),
    (json.dumps({'cluster': {'worker': ['a:1']},
                 'task': {'type': 'chief', 'index': 0}}),
     'TF_CONFIG task chief:0 is not in its cluster, which has worker x1'),
    (json.dumps({'cluster': {'chief': ['a:1'], 'worker': ['b:1']},
                 'task': {'type': 'worker', 'index': 1}}),
     'TF_CONFIG task worker:1 is not in its cluster: job "worker" has 1 '
     'task(s), indices 0..0'),
])
def test_tf_config_problems_name_what_is_wrong(raw, expected):
  found = tf_config.problem(raw)
  assert found and found.startswith(expected), found
  with pytest.raises(tf_config.TfConfigError, match='TF_CONFIG'):
    tf_config.check(raw)


def test_a_valid_tf_config_has_no_problem():
  for raw in ('', json.dumps({'cluster': {'chief': ['a:1'], 'ps': ['b:1']},
                              'task': {'type': 'ps', 'index': 0}}),
              json.dumps({'cluster': {'chief': ['a:1']},
                          'task': {'type': 'evaluator', 'index': 0}})):
    assert tf_config.problem(raw, needs_chief=True) is None, raw
  workers = json.dumps({'cluster': {'worker': ['a:1', 'b:1']},
                        'task': {'type': 'worker', 'index': 0}})
  assert tf_config.problem(workers) is None  # trainer.main: worker 0 leads.
  assert 'no "chief" task (worker x2)' in tf_config.problem(
      workers, needs_chief=True)


def test_a_server_that_cannot_start_names_its_task_address_and_why():
  with socket.socket() as holder:
    holder.bind(('localhost', 0))
    holder.listen()
    address = f'localhost:{holder.getsockname()[1]}'
    assert tf_config.server_start_problem('ps:1', address).startswith(
        f'TF_CONFIG task ps:1 could not start its TensorFlow server at '
        f'{address}: its port is in use by another process.')
  assert tf_config.server_start_problem('chief:0', '192.0.2.1:2222') == (
      'TF_CONFIG task chief:0 could not start its TensorFlow server at '
      '192.0.2.1:2222: the address is not one of this host\'s. Give the task '
      'an address of the host it runs on in TF_CONFIG "cluster".')  # TEST-NET
