"""Model_fns whose replicas only a TF1 graph can build, under MirroredStrategy.

model_to_estimator's model_fn builds a Keras 2 graph-mode (v1) model and
trains it with Keras's v1 training machinery, which exists in a TF1 graph
only: under a tf.function (the tf2 runner) Keras builds v2 models, which
cannot be compiled against the Estimator's labels. Such a model_fn is
marked (`mark`), and under a MirroredStrategy of several replicas its
training and evaluation run as Estimator ran them, in one graph
(distributed_train.py; the facade's Estimator._call_model_fn_eval_distributed:
the model_fn once per replica, its metrics and a per-replica `loss` mean
combined by the strategy).

Estimator 2.15 hangs at its first session.run when the strategy was made
eagerly (the usual program: `tf.distribute.MirroredStrategy([...])` before
the Estimator) over devices its Session does not see (logical CPUs, unless
session_config sets device_count), and works when it was made in graph
mode; the graph engine therefore runs a twin of the strategy made in graph
mode, over the same devices: what Estimator computes with a strategy it
can run.
"""

import weakref

import tensorflow as tf

from trainer.compat import tf_private

_MARK = '_trainer_replicas_in_graph'
_MIRRORED = frozenset(('MirroredStrategy', 'MirroredStrategyV1'))


def mark(model_fn):
  """Marks model_fn as building its replicas in a TF1 graph only; returns
  it."""
  setattr(model_fn, _MARK, True)
  return model_fn


def runs_in_graph(strategy, model_fn):
  """Whether `model_fn` runs under `strategy` (several replicas) here."""
  return bool(getattr(model_fn, _MARK, False)) and (
      type(strategy).__name__ in _MIRRORED)


def graph_twin(strategy):
  """A MirroredStrategy over `strategy`'s devices made in graph mode (see
  the module docstring), one per strategy; `strategy` itself when it is no
  MirroredStrategy."""
  if type(strategy).__name__ not in _MIRRORED:
    return strategy
  if strategy not in _twins:
    with tf_private.graph_mode(), tf.Graph().as_default():
      _twins[strategy] = tf.distribute.MirroredStrategy(
          devices=list(strategy.extended.worker_devices))
  return _twins[strategy]


_twins = weakref.WeakKeyDictionary()
