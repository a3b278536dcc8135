"""tf.estimator.experimental.InMemoryEvaluatorHook on the graph engine.

The hook evaluates during Estimator.train without a checkpoint: at begin()
it builds the evaluation graph apart (the model_fn in EVAL mode, its
metrics and `loss`, as Estimator.evaluate builds them); after the training
session is created, after every `every_n_iter` training steps and at the
end of training it copies the training variables' values into the
evaluation graph's same-named variables and runs one evaluation, whose
results Estimator writes to model_dir/eval[_NAME] at the training step.
As in the reference: one machine only, no custom Saver or init_fn in the
evaluation Scaffold, no saveables other than global variables.

Under a distribution strategy the facade trains on the tf2 runner, which
has no training Session to copy from: refused when the hook is made.
"""

import os

import tensorflow as tf

from trainer.api import specs
from trainer.facade import estimator as estimator_lib
from trainer.facade import unsupported

_v1 = tf.compat.v1


class InMemoryEvaluatorHook(_v1.train.SessionRunHook):
  """Evaluates the training variables every N steps and at the end."""

  def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None,
               every_n_iter=100):
    if every_n_iter is None or every_n_iter <= 0:
      raise ValueError(f'invalid every_n_iter={every_n_iter}.')
    if (estimator.config.num_ps_replicas > 0 or
        estimator.config.num_worker_replicas > 1):
      raise ValueError('InMemoryEvaluator supports only single machine (aka '
                       'Local) setting.')
    if estimator._needs_tf2(specs.ModeKeys.TRAIN):  # pylint: disable=protected-access
      raise unsupported.UnsupportedApiError(
          'tf.estimator.experimental.InMemoryEvaluatorHook with a '
          'train_distribute strategy is not supported by trainer.legacy: '
          'training runs under tf.distribute, without a Session to copy '
          'variables from. Instead: call evaluate() between train(steps=N) '
          'calls, or use tf.estimator.train_and_evaluate.')
    self._estimator = estimator
    self._input_fn = input_fn
    self._name = name
    self._every_n_iter = every_n_iter
    self._eval_dir = os.path.join(estimator.model_dir,
                                  'eval' if not name else 'eval_' + name)
    self._graph = None
    self._hooks = estimator_lib._check_hooks_type(hooks)  # pylint: disable=protected-access
    self._hooks.extend(estimator._convert_eval_steps_to_hooks(steps))  # pylint: disable=protected-access
    self._timer = _v1.train.SecondOrStepTimer(every_steps=every_n_iter)

  def begin(self):
    """Builds the evaluation graph (Estimator._evaluate_build_graph) and a
    placeholder per global variable."""
    self._timer.reset()
    self._iter_count = 0
    self._graph = tf.Graph()
    with self._graph.as_default():
      (self._scaffold, self._update_op, self._eval_dict,
       self._all_hooks) = self._estimator._evaluate_build_graph(  # pylint: disable=protected-access
           self._input_fn, self._hooks, checkpoint_path=None)
      if self._scaffold.saver is not None:
        raise ValueError('InMemoryEvaluator does not support custom saver')
      if self._scaffold.init_fn is not None:
        raise ValueError('InMemoryEvaluator does not support custom init_fn')
      variables = _v1.get_collection(_v1.GraphKeys.GLOBAL_VARIABLES)
      self._eval_variables = {v.name: v for v in variables}
      self._placeholders = {v.name: _v1.placeholder(v.dtype)
                            for v in variables}

  def after_create_session(self, session, coord):
    """Pairs training and evaluation variables; evaluates once first."""
    del coord
    if _v1.get_collection(_v1.GraphKeys.SAVEABLE_OBJECTS):
      raise ValueError('InMemoryEvaluator does not support saveables other '
                       'than global variables.')
    train_variables = {
        v.name: v for v in _v1.get_collection(_v1.GraphKeys.GLOBAL_VARIABLES)}
    names = set(self._placeholders) & set(train_variables)
    self._train_variables = {n: train_variables[n] for n in names}
    with self._graph.as_default():
      self._feed_op = tf.group([
          _v1.assign(self._eval_variables[n], self._placeholders[n])
          for n in names])
    self._evaluate(session)

  def _evaluate(self, train_session):
    values = train_session.run(self._train_variables)
    feed = {self._placeholders[n]: value for n, value in values.items()}

    def feed_variables(scaffold, session):
      del scaffold
      session.run(self._feed_op, feed_dict=feed)

    scaffold = _v1.train.Scaffold(init_fn=feed_variables,
                                  copy_from_scaffold=self._scaffold)
    with self._graph.as_default():
      self._estimator._evaluate_run(  # pylint: disable=protected-access
          checkpoint_path=None, scaffold=scaffold, update_op=self._update_op,
          eval_dict=self._eval_dict, all_hooks=self._all_hooks,
          output_dir=self._eval_dir)
    self._timer.update_last_triggered_step(self._iter_count)

  def after_run(self, run_context, run_values):
    del run_values
    self._iter_count += 1
    if self._timer.should_trigger_for_step(self._iter_count):
      self._evaluate(run_context.session)

  def end(self, session):
    """Evaluates the final variables."""
    self._evaluate(session)
