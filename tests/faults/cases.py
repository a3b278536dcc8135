"""The fault-injection table: each case, the paths it is run on, the exit
status and the line a user reads, and the test that checks it.

The tests take their expected status and message from here, and
robustness_doc_test checks that docs/robustness.md's table is this one, so
the document, the expectations and the tests cannot drift apart.

A message is the text after the entry point's prefix (`error: ` for
trainer.main, `trainer.legacy: error: ` for the launcher, which also
prefixes its stop lines with `trainer.legacy: `), with {NAME} for what
varies from run to run.
"""

import collections
import re

BOTH = ('main', 'launcher')
Case = collections.namedtuple(
    'Case', ['key', 'title', 'paths', 'exit', 'message', 'tests',
             'guaranteed'])

CASES = [
    Case('second-job', 'two jobs on one model_dir at once', BOTH, '1',
         'error: --model_dir={MODEL_DIR} is in use by another trainer (pid '
         '{PID} on {HOST}, started {TIME}; lock {LOCK}). Stop it or use '
         'another --model_dir.',
         ['faults/jobs_test.py::test_a_second_job_on_one_model_dir_is_refused',
          'faults/guard_test.py::test_a_second_chief_is_refused'],
         'the second writes nothing and exits within seconds (trainer.main: '
         'before importing TensorFlow); the first trains on'),
    Case('stale-lock', 'a stale lock (its holder SIGKILLed)', BOTH, '0',
         'model_dir {MODEL_DIR}: taking over the lock left by pid {PID} on '
         '{HOST} (started {TIME}), which is no longer running.',
         ['faults/restart_test.py::test_signals_and_kills_then_restart',
          'faults/model_dir_lock_test.py::'
          'test_a_stale_lock_is_taken_over_with_one_warning'],
         'the restart takes the lock over and resumes; nothing waits on a dead'
         ' process'),
    Case('evaluator-not-blocked', 'an evaluator, worker or ps of the job '
         'while the chief trains', ('launcher',), '-',
         'never locks, never blocked',
         ['faults/guard_test.py::test_other_tasks_never_lock_nor_recover'],
         'the chief alone locks and recovers; other tasks start and run as '
         'before'),
    Case('sigterm', 'SIGTERM mid-training', BOTH, '143',
         'Preempted (SIGTERM): stopped at step {STEP} with a checkpoint in '
         '{MODEL_DIR}; run the same command again to continue.',
         ['faults/restart_test.py::test_signals_and_kills_then_restart',
          'faults/replicas_test.py::'
          'test_two_replicas_stop_on_signals_and_restart'],
         'a checkpoint at the step reported; the same command continues from '
         'it'),
    Case('sigint', 'SIGINT (Ctrl-C) mid-training', BOTH, '130',
         'Interrupted (SIGINT): stopped at step {STEP} with a checkpoint in '
         '{MODEL_DIR}; run the same command again to continue.',
         ['faults/restart_test.py::test_signals_and_kills_then_restart',
          'faults/replicas_test.py::'
          'test_two_replicas_stop_on_signals_and_restart'],
         'a checkpoint at the step reported; the same command continues from '
         'it'),
    Case('second-signal', 'a second SIGINT / SIGTERM, also during a long '
         'step or a save', BOTH, '130 / 143',
         'SIGINT again: exiting at once, without a checkpoint of the running '
         'step (the latest checkpoint stays).',
         ['faults/signals_test.py::'
          'test_a_second_signal_ends_a_long_step_at_once',
          'faults/signals_test.py::'
          'test_a_second_signal_lets_a_save_under_way_complete',
          'faults/restart_test.py::test_signals_and_kills_then_restart'],
         'the process ends at once (a save under way completes first: at '
         'most 60 s, a third signal ends it); every checkpoint left loads'),
    Case('sigkill', 'SIGKILL at start-up, mid-step, mid-save, mid-eval, '
         'mid-export; then a restart', BOTH, '0',
         '(the restart) reaches the final step; every checkpoint left loads; '
         'final metrics equal an uninterrupted run',
         ['faults/restart_test.py::test_signals_and_kills_then_restart'],
         'no checkpoint lost or corrupted; the restart reaches the final '
         "step with the uninterrupted run's metrics"),
    Case('truncated-checkpoint', "newest checkpoint's .data file truncated",
         BOTH, '0',
         'model_dir {MODEL_DIR}: incomplete checkpoint {CKPT} ({DATA} has '
         '{N} of the {M} bytes its index lists (cut short)) moved aside to '
         '{MODEL_DIR}/corrupt-{TIME}/; resuming from the newest complete '
         'checkpoint, {PREVIOUS}.',
         ['faults/resume_test.py::'
          'test_a_truncated_newest_checkpoint_is_moved_aside',
          'faults/checkpoints_test.py::'
          'test_a_truncated_newest_checkpoint_is_moved_aside'],
         'the broken checkpoint moved aside, never deleted; training resumes '
         'from the newest complete one'),
    Case('missing-checkpoint', '`checkpoint` file names a missing '
         'checkpoint', BOTH, '0',
         'model_dir {MODEL_DIR}: the checkpoint state named {CKPT}, which is '
         'not there; resuming from the newest complete checkpoint, '
         '{PREVIOUS}.',
         ['faults/resume_test.py::'
          'test_a_state_naming_a_missing_checkpoint_falls_back'],
         'training resumes from the newest complete checkpoint'),
    Case('full-disk', 'model_dir on a full disk (3 MiB tmpfs)', BOTH, '1',
         'error: cannot write to model_dir {MODEL_DIR}: No space left on '
         'device (ENOSPC, saving checkpoint {CKPT}). The last complete '
         'checkpoint, {PREVIOUS}, is kept and loads. To continue, free space '
         'there or use a model_dir on a disk with room, then run the same '
         'command again.',
         ['faults/storage_test.py::test_full_disk',
          'faults/storage_test.py::'
          'test_a_save_on_a_full_disk_keeps_the_last_checkpoint'],
         'the previous checkpoint stays the latest and loads; no temporary '
         'file left'),
    Case('truncated-tfrecord', 'a TFRecord shard cut in half', BOTH, '1',
         'error: Truncated TFRecord file: {FILE} is cut short: the record at '
         'byte {OFFSET} needs {N} bytes, the file has {M} left ({K} complete '
         'records before it). TensorFlow would read the records before the '
         'cut and drop the rest without a word. Replace the file, or pass '
         '--skip_corrupt_records{TO_THE_LAUNCHER} to use the records before '
         'the cut on purpose.',
         ['faults/data_test.py::'
          'test_a_cut_training_file_fails_before_training',
          'faults/data_test.py::test_the_input_pipeline_refuses_a_cut_file'],
         'nothing trains on a file cut short unless asked to'),
    Case('cpu-fallback', '--cpu_fallback, the program\'s own '
         '--use_tpu=True wrapping CrossShardOptimizer, summing with '
         'cross_replica_sum', ('launcher',), '0',
         '(trains as on one TPU core: the same metrics as --use_tpu=False)',
         ['faults/cpu_fallback_test.py::'
          'test_cross_shard_optimizer_runs_as_one_replica',
          'faults/cpu_fallback_test.py::'
          'test_one_core_collectives_are_the_identity'],
         'the same metrics as --use_tpu=False'),
    Case('cpu-fallback-tpu-only', '--cpu_fallback, the program\'s own '
         '--use_tpu=True calling a TPU-only function (tf.tpu.rewrite, shard, '
         'replicate, ...)', ('launcher',), '1',
         'error: the program calls {CALL}, which only a TPU can run; with '
         '--cpu_fallback and no TPU it runs on the CPU as one TPU core. Run '
         'the program with its own --use_tpu=False (its flag for training '
         'without a TPU), or on a TPU.',
         ['faults/cpu_fallback_test.py::'
          'test_a_tpu_only_call_fails_before_training',
          'faults/cpu_fallback_test.py::'
          'test_calls_without_a_one_core_meaning_are_refused'],
         'nothing trained or written'),
    Case('read-only', 'read-only model_dir', BOTH, '1',
         'error: cannot write to model_dir {MODEL_DIR}: Read-only file '
         'system (EROFS, writing {MODEL_DIR}/.trainer.lock). No checkpoint '
         'was written. To continue, use a model_dir on a writable file '
         'system, then run the same command again.',
         ['faults/storage_test.py::test_read_only_model_dir'],
         'nothing written; the directory untouched'),
    Case('gcs-offline', 'gs:// model_dir without network', BOTH, '1',
         'error: cannot reach model_dir {MODEL_DIR}: Error executing an HTTP '
         'request: {DETAIL}. Check the network and the credentials for this '
         'storage (for gs://: gcloud auth application-default login, or '
         'GOOGLE_APPLICATION_CREDENTIALS), or use a local model_dir.',
         ['faults/storage_test.py::test_gcs_model_dir_without_network',
          'faults/storage_test.py::test_storage_out_of_reach_is_named'],
         'nothing written'),
    Case('dangling-symlink', 'a dangling symlink among the data files', BOTH,
         '1',
         'error: {WHAT} {FILE} is a symbolic link to {TARGET}, which does '
         'not exist: fix the link or remove it.',
         ['faults/misuse_test.py::'
          'test_a_dangling_symlink_among_the_data_files',
          'faults/estimator_api_test.py::test_a_dangling_csv_data_file'],
         'nothing trained (a CSV file is read at the first step, after the '
         'step-0 checkpoint, which loads)'),
    Case('dict-model-fn', 'a model_fn that returns a dict', BOTH, '1',
         'error: {WHICH} returned {WHAT}: return '
         'tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, ...) '
         'from it (tf.compat.v1.estimator.tpu.TPUEstimatorSpec under '
         'TPUEstimator).',
         ['faults/misuse_test.py::test_a_model_fn_returning_a_dict'],
         'nothing trained or written'),
    Case('changed-model', 'the same program restarted with a changed model '
         '(a hidden layer 16 → 32 wide; `trainer.main`: a setting its '
         'record does not hold, or a model_dir without one)', BOTH, '1',
         'error: checkpoint {CKPT} does not fit the model: {VARIABLE} is '
         '{OLD} there and {NEW} in the model{MORE}. Nothing was restored. '
         'To train this model, use a new model_dir; to start it from these '
         'weights where they fit, warm-start from this checkpoint (in an '
         "Estimator program: warm_start_from=tf.estimator.WarmStartSettings("
         "'{CKPT}', vars_to_warm_start=[...the variables that fit]); with "
         'trainer.main: --init_checkpoint={CKPT}, when every model variable '
         'fits, e.g. after a change of optimizer).',
         ['faults/model_fit_test.py::'
          'test_a_changed_model_is_refused_before_any_step'],
         'refused in train, evaluate, predict and export before the restore, '
         'every differing variable listed below; nothing trained or written '
         '(TF 2.15 launcher: Estimator\'s events file of the graph); the '
         'checkpoint stays the latest and loads; the same model resumes'),
    Case('changed-config', '`trainer.main` restarted with another model '
         'setting (--mlp_hidden_units, --optimizer, classes, image shape)',
         ('main',), '1',
         'error: --model_dir={MODEL_DIR} holds a run of another model '
         'configuration ({DIFFS}; recorded in '
         '{MODEL_DIR}/trainer_config.json). Nothing was changed. To train '
         'this configuration, use a new --model_dir (add '
         "--init_checkpoint={MODEL_DIR} to start from that run's weights, "
         'when every variable fits, e.g. after a change of optimizer only); '
         'to go on with that run, pass the values it was trained with. The '
         'last and destructive option, --overwrite_model_dir, deletes that '
         'run (checkpoints, summaries, exports) and starts over.',
         ['faults/model_fit_test.py::'
          'test_a_changed_model_is_refused_before_any_step'],
         'nothing written; the same model named --model=mlp or '
         'model_fn/models.py:mlp_model_fn resumes'),
    Case('no-tf-keras', 'the tf-keras extra missing (TF >= 2.16)', BOTH, '1',
         'error: TensorFlow {VERSION} without tf-keras: legacy model code '
         '(get_variable models under the tf2 runner, tf.compat.v1.layers, '
         'the Estimator facade) needs Keras 2. Install the extra matching '
         'your TensorFlow: pip install "tpu-trainer[{EXTRA}]" (or pip '
         'install "tf-keras~={VERSION}.0").',
         ['faults/misuse_test.py::test_the_tf_keras_extra_missing'],
         'nothing imported, trained or written'),
    Case('missing-feature', "a feature column's key missing from the "
         "input_fn's features (launcher: one replica, two on the facade)",
         BOTH, '1',
         'error: feature {KEY} is not among the features the {SOURCE} '
         'returns (it has {KEYS}), but a feature column reads it: return a '
         'feature named {KEY} from the {SOURCE}, or remove the column that '
         'reads it.',
         ['faults/estimator_api_test.py::'
          'test_a_feature_column_whose_key_the_input_fn_lacks'],
         'fails before the first step; no checkpoint written'),
    Case('label-range', 'labels >= n_classes (a canned head)', ('launcher',),
         '1',
         'error: a label is outside 0..{MAX}, as n_classes={N} (the head '
         'takes class ids): pass n_classes=<the number of classes> to the '
         'Estimator, label_vocabulary=[...] for string labels, or fix the '
         'labels the input_fn returns.',
         ['faults/estimator_api_test.py::test_labels_beyond_the_classes'],
         'fails at the first step; the checkpoint before it loads'),
    Case('num-classes', 'labels >= --num_classes (the built-in models; '
         'before: trained on all-zero targets, exit 0)', ('main',), '1',
         'error: a label is outside 0..{MAX} (--num_classes={N}; labels '
         'seen: {LABELS}): set --num_classes to the number of classes in '
         'the data, or fix the labels of the input.',
         ['faults/estimator_api_test.py::test_labels_beyond_the_classes'],
         'fails at the first step; the checkpoint before it loads'),
    Case('string-labels', 'string labels without `label_vocabulary`',
         ('launcher',), '1',
         'error: the labels are strings, but the head takes integer class '
         'ids{NODE}: pass label_vocabulary=[the label strings, in class '
         'order] to the Estimator, or return integer labels 0..n_classes-1 '
         'from the input_fn.',
         ['faults/estimator_api_test.py::'
          'test_string_labels_without_a_label_vocabulary'],
         'fails at the first step; the checkpoint before it loads'),
    Case('missing-vocabulary', 'a vocabulary file that does not exist',
         ('launcher',), '1',
         'error: vocabulary file {FILE} does not exist (a lookup table is '
         'built from it: categorical_column_with_vocabulary_file or a table '
         'from a file): create it, or give the program the path of an '
         'existing file.',
         ['faults/estimator_api_test.py::'
          'test_a_vocabulary_file_that_does_not_exist'],
         'fails before the first step; no checkpoint written'),
    Case('nan-features', 'NaN in the features (Estimator\'s NanTensorHook)',
         ('launcher',), '1',
         'error: Loss is nan at step {STEP}: training stopped. Check the '
         'input_fn\'s features and labels for NaN or Inf, or lower the '
         'learning rate. {KEPT}',
         ['faults/estimator_api_test.py::test_nan_in_the_features'],
         'names the checkpoints Estimator saved after the NaN step (they '
         'hold NaN, as on TF 2.15) and the newest finite one, which loads'),
    Case('export-read-only', '`export_saved_model` into a read-only '
         'directory (trainer.main: --export_dir)', BOTH, '1',
         'error: cannot write the export to {DIR}: {CAUSE}. Nothing was '
         'exported, and the checkpoints in model_dir are unchanged. Give '
         '{KNOB} a directory on a writable file system with room, then run '
         'the same command again.',
         ['faults/estimator_api_test.py::'
          'test_an_export_into_a_read_only_directory'],
         'every checkpoint loads; nothing exported'),
    Case('unreadable-checkpoint', 'a checkpoint whose bytes do not read '
         '(checksums), restored to export', BOTH, '1',
         'error: checkpoint {CKPT} cannot be read ({DETAIL}): restore its '
         'files (.index, .data-*) from a copy, or move them out of the '
         'model_dir (the checkpoint before it is then the latest).',
         ['faults/estimator_api_test.py::'
          'test_a_checkpoint_that_does_not_read'],
         'nothing exported; the other checkpoints load'),
    Case('own-exception', 'the program\'s own exception (its input_fn '
         'raises; trainer.main: a --model module\'s model_fn)', BOTH, '1',
         'error: {TYPE} raised at {FILE}:{LINE} in {FUNCTION}: {MESSAGE}',
         ['faults/estimator_api_test.py::'
          'test_the_programs_own_exception_keeps_its_traceback'],
         'then its traceback (the launcher\'s: from the program\'s first '
         'frame); no checkpoint written'),
    Case('tf-config-json', '`TF_CONFIG` not JSON', BOTH, '1',
         'error: TF_CONFIG is not valid JSON ({DETAIL}): set it to a JSON '
         'object such as {EXAMPLE}, or unset it to train on this machine '
         'alone.',
         ['faults/cluster_config_test.py::test_tf_config_that_is_not_json'],
         'nothing trained or written (trainer.main: before TensorFlow is '
         'imported)'),
    Case('tf-config-task', 'a `TF_CONFIG` task index beyond its job', BOTH,
         '1',
         'error: TF_CONFIG task {TASK} is not in its cluster: job "{JOB}" '
         'has {N} task(s), indices 0..{LAST}: set "task": {"index": ...} to '
         'one of them, or add this task\'s address to "cluster": {"{JOB}": '
         '[...]}.',
         ['faults/cluster_config_test.py::test_a_task_index_beyond_its_job'],
         'nothing trained or written (trainer.main: before TensorFlow is '
         'imported)'),
    Case('tf-config-chief', 'a `TF_CONFIG` cluster without a chief',
         ('launcher',), '1',
         'error: TF_CONFIG\'s cluster has no "chief" task ({JOBS}); '
         'Estimator needs exactly one: list the address of the task that '
         'leads (worker 0 of a cluster without one) as "chief": '
         '["host:port"] and number the remaining workers from 0.',
         ['faults/cluster_config_test.py::test_a_cluster_without_its_chief'],
         'nothing trained or written'),
    Case('port-in-use', 'a `TF_CONFIG` port in use by another process '
         '(launcher: chief and ps of a ps cluster; trainer.main: worker 0 '
         'of two)', BOTH, '1',
         'error: TF_CONFIG task {TASK} could not start its TensorFlow server '
         'at {ADDRESS}: its port is in use by another process. Stop that '
         'process, or give the task a free port of this host in TF_CONFIG '
         '"cluster".',
         ['faults/cluster_config_test.py::'
          'test_a_port_taken_by_another_process'],
         'nothing trained or written'),
    Case('help', '`--help` of each console script (tpu-trainer, '
         'tpu-trainer-legacy, -verify-migration, -memory, -convert)', BOTH,
         '0',
         'usage: {SCRIPT} [--flag=value ...] ... then its flags',
         ['package_test.py::'
          'test_console_script_help_lists_flags_under_its_name',
          'package_test.py::'
          'test_help_and_flag_errors_come_before_tensorflow_is_imported'],
         "exits 0 in seconds listing the flags under the script's own name; "
         'it and a flag error (exit 1, launcher 2) before TensorFlow is '
         'imported'),
]
BY_KEY = {case.key: case for case in CASES}


def pattern(key, **values):
  """A regex of case `key`'s message: {NAME} is values[NAME] (escaped) or,
  when not given, any text."""
  parts = re.split(r'\{(\w+)\}', BY_KEY[key].message)
  regex = ''
  for i, part in enumerate(parts):
    if i % 2 == 0:
      regex += re.escape(part)
    else:
      regex += re.escape(str(values[part])) if part in values else '.*?'
  return regex


def exit_status(key):
  """Case `key`'s exit status, an int."""
  return int(BY_KEY[key].exit)


def message_pattern(path, key, **values):
  """pattern() with the prefix path's entry point prints before it
  (`trainer.legacy: ` for the launcher's lines)."""
  prefix = r'trainer\.legacy: ' if path == 'launcher' else ''
  return prefix + pattern(key, **values)


PATH_NAMES = {'main': '`trainer.main`', 'launcher': 'launcher'}


def table():
  """docs/robustness.md's table, as Markdown lines: a column per path,
  holding the exit status where the case is run on that path (else
  n/a: the case does not apply there)."""
  lines = ['| case | ' + ' | '.join(PATH_NAMES.values()) +
           ' | what the user reads | what is guaranteed | tests |',
           '|---|---|---|---|---|---|']
  for case in CASES:
    tests = '<br>'.join(f'`{t}`' for t in case.tests)
    exits = ' | '.join(case.exit if path in case.paths else 'n/a'
                       for path in PATH_NAMES)
    lines.append(f'| {case.title} | {exits} | {_cell(case.message)} '
                 f'| {case.guaranteed} | {tests} |')
  return lines


def _cell(message):
  if message.startswith('('):
    return message
  return f'`{message}`'
