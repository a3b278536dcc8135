"""The TensorBoard summaries Estimator writes, written the same way here.

Training: Estimator adds a `loss` scalar summary after the model_fn
(unless the model_fn made one, as a head does), a
SummarySaverHook (every save_summary_steps, the merged summaries) and a
StepCounterHook (`global_step/sec` every log_step_count_steps) writing to
model_dir. `training_hooks` makes the same hooks, of TF's own classes, for
the tf2 runner's hook driver, so both runners write the same tags at the
same steps. tf.summary (v2) writes the model_fn makes with its own writer
(SimCLR's `create_file_writer(model_dir)`, `record_if`, the writes in the
train_op's dependencies) run in the traced step, at the steps they would
in Estimator's graph; in a compiled step they are refused as v1 summaries
are.

Evaluation summaries are trainer/runtime/eval_summaries.py's, for every
runner.
"""

import re

import tensorflow as tf

from trainer.api import errors
from trainer.compat import tf_private

_v1 = tf.compat.v1


class CompiledStepError(errors.TrainerError, ValueError):
  """The model_fn makes summary ops in a step XLA compiles."""


class LossSummaryHook(_v1.train.SessionRunHook):
  """SummarySaverHook's `loss` summary, written on the host: for a step XLA
  compiles (TPU, --jit_compile=on), which cannot hold a summary op. Same
  cadence and steps as SummarySaverHook."""

  def __init__(self, loss, save_steps, output_dir):
    self._loss = loss
    self._save_steps = save_steps
    self._output_dir = output_dir

  def begin(self):
    self._timer = _v1.train.SecondOrStepTimer(every_steps=self._save_steps)
    self._writer = _v1.summary.FileWriterCache.get(self._output_dir)
    self._step = tf_private.global_step_read()  # SummarySaverHook's too.
    self._next_step = None

  def before_run(self, run_context):
    return _v1.train.SessionRunArgs({'loss': self._loss, 'step': self._step})

  def after_run(self, run_context, run_values):
    step = int(run_values.results['step']) + 1  # After the step's update.
    if self._next_step is None or self._timer.should_trigger_for_step(step):
      self._timer.update_last_triggered_step(step)
      self._writer.add_summary(_v1.Summary(value=[_v1.Summary.Value(
          tag='loss', simple_value=float(run_values.results['loss']))]), step)
    self._next_step = step + 1

  def end(self, session):
    self._writer.flush()


_WRITER_OPS = re.compile(r'^(Write\w*Summary|\w*SummaryWriter)$')


def _summary_writer_ops():
  """The ops of the graph being built that use a tf.summary writer."""
  return [op for op in _v1.get_default_graph().get_operations()
          if _WRITER_OPS.match(op.type)]


def _has_loss_summary():
  """Whether the model_fn made a summary named `loss` at the graph's root
  (a head does): Estimator then adds none of its own."""
  return any(summary.op.name == 'loss'
             for summary in _v1.get_collection(_v1.GraphKeys.SUMMARIES))


def training_hooks(loss, model_dir, save_summary_steps, log_step_count_steps,
                   compiled=False):
  """Estimator's default summary hooks; call in the traced step after the
  model_fn, inside its collections (merges the model_fn's summaries).

  compiled: the step is XLA-compiled, where summary ops cannot run: the
  loss is then written from the host, and summary ops of the model_fn are
  refused (CompiledStepError), as TPUEstimator refuses them on TPU.
  """
  hooks = []
  if compiled:
    for kind, found in (('tf.compat.v1.summary ops',
                         _v1.get_collection(_v1.GraphKeys.SUMMARIES)),
                        ('tf.summary writes', _summary_writer_ops())):
      if found:
        raise CompiledStepError(
            f'The model_fn makes {kind}, which cannot run in a step XLA '
            'compiles (on TPU or with --jit_compile=on): write summaries '
            'with host_call, or run with --jit_compile=off.')
  if save_summary_steps and compiled:
    hooks.append(LossSummaryHook(loss, save_summary_steps, model_dir))
  elif save_summary_steps:
    if not _has_loss_summary():  # As Estimator: the model_fn made none.
      _v1.summary.scalar('loss', loss)
    summary_op = _v1.summary.merge_all()
    if summary_op is not None:  # None where TF skips summaries (replicas).
      hooks.append(_v1.train.SummarySaverHook(
          save_steps=save_summary_steps, output_dir=model_dir,
          summary_op=summary_op))
  if log_step_count_steps:
    hooks.append(_v1.train.StepCounterHook(
        every_n_steps=log_step_count_steps, output_dir=model_dir))
  return hooks
