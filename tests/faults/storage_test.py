"""A model_dir whose storage refuses writes (a full disk, a read-only file
system) or cannot be reached (gs:// without network): one error line
naming the directory, the cause and the fix; the previous checkpoint stays
loadable and no temporary file is left.

Full disks are a 3 MiB tmpfs (mounting needs root; skipped otherwise);
read-only ones a read-only tmpfs, or a 0555 directory for a user that is
not root. On every machine, a save that fails with ENOSPC or EROFS after
writing part of its temporary files is injected in-process (the error
TensorFlow raises, measured on a full tmpfs and a file system remounted
read-only)."""

import os
import socket
import subprocess

import pytest
import tensorflow as tf

from tests import testutil
from tests.faults import cases
from tests.faults import faultutil
from trainer.guard import storage

_ENOSPC_FROM_SAVER = (  # Measured: what a Saver raises on a full tmpfs.
    'DIR/model.ckpt-3_temp/part-00000-of-00001.data-00000-of-00001.'
    'tempstate14303707846327885150; No space left on device')
_NO_NETWORK = (  # Measured: tf.io.gfile on gs:// without network.
    "Error executing an HTTP request: libcurl code 6 meaning 'Could not "
    "resolve hostname', error details: Could not resolve host: "
    'www.googleapis.com\n\t when reading metadata of gs://bucket/run/checkpoint')


def test_a_full_disk_is_named_with_the_checkpoint_being_saved(tmp_path):
  error = tf.errors.ResourceExhaustedError(
      None, None, _ENOSPC_FROM_SAVER.replace('DIR', str(tmp_path)))
  failure = storage.write_failure(error, str(tmp_path))
  assert str(failure).startswith(
      f'cannot write to model_dir {tmp_path}: No space left on device '
      '(ENOSPC, saving checkpoint model.ckpt-3). No checkpoint was written.')
  assert storage.write_failure(ValueError('other'), str(tmp_path)) is None


def test_storage_out_of_reach_is_named():
  error = tf.errors.FailedPreconditionError(None, None, _NO_NETWORK)
  failure = storage.unreachable(error, 'gs://bucket/run')
  assert str(failure).startswith(
      'cannot reach model_dir gs://bucket/run: Error executing an HTTP '
      "request: libcurl code 6 meaning 'Could not resolve hostname'")
  assert 'Check the network and the credentials' in str(failure)


_SAVE_FAILURES = {  # errno name -> the OpError a Saver raises, the fix.
    'ENOSPC': (tf.errors.ResourceExhaustedError, 'No space left on device',
               'free space there or use a model_dir on a disk with room'),
    'EROFS': (tf.errors.PermissionDeniedError, 'Read-only file system',
              'use a model_dir on a writable file system'),
}


@pytest.mark.parametrize('cause', sorted(_SAVE_FAILURES))
def test_a_save_failing_midway_keeps_the_last_checkpoint(tmp_path, cause):
  """The save of step 3 writes part of its temporary files, then the
  storage refuses (injected): one error naming the directory, the cause
  and checkpoint 2, which stays the latest and loads; nothing temporary
  is left."""
  model_dir = str(tmp_path)
  faultutil.save_checkpoints(model_dir, [1, 2])
  error_type, text, fix = _SAVE_FAILURES[cause]
  temp = os.path.join(model_dir, 'model.ckpt-3_temp')
  os.makedirs(temp)
  data = os.path.join(
      temp, 'part-00000-of-00001.data-00000-of-00001.tempstate14303707')
  with open(data, 'wb') as f:
    f.write(b'\0' * 1000)  # What was written before the refusal.
  with pytest.raises(storage.StorageError) as raised:
    with storage.reporting_write_failures(model_dir):
      raise error_type(None, None, f'{data}; {text}')
  assert str(raised.value) == (
      f'cannot write to model_dir {model_dir}: {text} ({cause}, saving '
      'checkpoint model.ckpt-3). The last complete checkpoint, '
      f'model.ckpt-2, is kept and loads. To continue, {fix}, then run the '
      'same command again.')
  assert '\n' not in str(raised.value)
  assert faultutil.leftovers(model_dir) == []
  assert tf.train.latest_checkpoint(model_dir).endswith('model.ckpt-2')
  assert faultutil.assert_every_checkpoint_loads(model_dir) == 2


def _save(saver, sess, model_dir, step):
  return saver.save(sess, os.path.join(model_dir, 'model.ckpt'),
                    global_step=step)


def test_a_save_on_a_full_disk_keeps_the_last_checkpoint():
  with faultutil.small_disk(3) as model_dir:
    if model_dir is None:
      pytest.skip('no tmpfs can be mounted here (needs root)')
    with tf.Graph().as_default():
      tf.compat.v1.get_variable('w', [300, 1000])  # 1.2 MB a checkpoint.
      step = tf.compat.v1.train.get_or_create_global_step()
      saver = tf.compat.v1.train.Saver(max_to_keep=5)
      with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        with pytest.raises(storage.StorageError) as raised:
          with storage.reporting_write_failures(model_dir):
            for n in range(1, 10):
              sess.run(step.assign(n))
              _save(saver, sess, model_dir, n)
    message = str(raised.value)
    assert 'No space left on device (ENOSPC' in message
    assert f'model_dir {model_dir}' in message
    kept = tf.train.latest_checkpoint(model_dir)
    assert f'The last complete checkpoint, {os.path.basename(kept)}, is kept' \
        in message
    assert faultutil.leftovers(model_dir) == []
    assert faultutil.assert_every_checkpoint_loads(model_dir) >= 1


# Paths: what each needs to fill 3 MiB within a few checkpoints.
_BIG = {'launcher': ['--ballast_mb=0.6'], 'main': ['--mlp_hidden_units=128']}


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_full_disk(path_name, fault_data):
  path = faultutil.PATHS[path_name]
  record = faultutil.Record(path.name)
  with faultutil.small_disk(3) as disk:
    if disk is None:
      pytest.skip('no tmpfs can be mounted here (needs root)')
    model_dir = os.path.join(disk, 'model')
    result, seconds = faultutil.run(path.command(model_dir, fault_data,
                                                 *_BIG[path.name]))
    assert result.returncode == cases.exit_status('full-disk'), (
        result.stderr[-3000:])
    line = faultutil.assert_first_message(
        result.stderr, cases.message_pattern(path.name, 'full-disk',
                                             MODEL_DIR=model_dir))
    assert 'Traceback' not in result.stderr
    assert faultutil.leftovers(model_dir) == []
    loaded = faultutil.assert_every_checkpoint_loads(model_dir)
    latest = tf.train.latest_checkpoint(model_dir)
    if latest:
      assert f'{os.path.basename(latest)}, is kept and loads' in line
    record.add('model_dir on a full disk (3 MiB)', result.returncode, seconds,
               line, loaded >= 1 or latest is None)


@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_read_only_model_dir(path_name, fault_data):
  path = faultutil.PATHS[path_name]
  with faultutil.read_only_dir() as model_dir:
    if model_dir is None:
      pytest.skip('no read-only directory can be made here')
    result, seconds = faultutil.run(path.command(model_dir, fault_data))
  assert result.returncode == cases.exit_status('read-only'), (
      result.stderr[-3000:])
  expected = cases.message_pattern(path.name, 'read-only',
                                   MODEL_DIR=model_dir)
  if os.geteuid() != 0:  # A 0555 directory: a denied permission instead.
    expected = expected.replace('Read\\-only\\ file\\ system\\ \\(EROFS',
                                'Permission\\ denied\\ \\(EACCES')
  line = faultutil.assert_first_message(result.stderr, expected)
  assert 'Traceback' not in result.stderr
  faultutil.Record(path.name).add('read-only model_dir', result.returncode,
                                  seconds, line, True)


@pytest.mark.skipif(testutil.HAS_ESTIMATOR, reason='TensorFlow\'s retries '
                    'make it 25 s a run: on the modern lane only (the '
                    'mapping is tested on every lane above)')
@pytest.mark.parametrize('path_name', ['launcher', 'main'])
def test_gcs_model_dir_without_network(path_name, fault_data):
  path = faultutil.PATHS[path_name]
  model_dir = 'gs://tpu-trainer-faults-no-such-bucket/run'
  command = path.command(model_dir, fault_data)
  if _has_network():  # Then in a network namespace of its own, if it can.
    command = ['unshare', '--map-root-user', '--net'] + command
    if subprocess.run(command[:3] + ['true'],
                      capture_output=True).returncode != 0:
      pytest.skip('this machine reaches Google Cloud and cannot unshare '
                  'its network')
  result, seconds = faultutil.run(command, env={'NO_GCE_CHECK': 'true'})
  assert result.returncode == cases.exit_status('gcs-offline'), (
      result.stderr[-3000:])
  line = faultutil.assert_first_message(
      result.stderr, cases.message_pattern(path.name, 'gcs-offline',
                                           MODEL_DIR=model_dir))
  assert 'Traceback' not in result.stderr
  faultutil.Record(path.name).add('gs:// model_dir without network',
                                  result.returncode, seconds, line, True)


def _has_network():
  try:
    socket.getaddrinfo('www.googleapis.com', 443)
  except OSError:
    return False
  return True
