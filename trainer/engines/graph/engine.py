"""GraphEngine: the graph engine's calls as an Engine
(trainer/engines/engine.py).

One Program (program.py: a model_fn, its params and RunConfig) and, for
training, optionally one of the strategies Estimator ran in its own graph
(distributed_train.py); each call builds its own graph and session
(train.py, evaluate.py, predict.py, export.py).
"""

import tensorflow as tf

from trainer.api import specs
from trainer.engines.graph import distributed_train
from trainer.engines.graph import evaluate as evaluate_lib
from trainer.engines.graph import export as export_lib
from trainer.engines.graph import predict as predict_lib
from trainer.engines.graph import train as train_lib
from trainer.runtime import checkpoints


class GraphEngine:
  """train / evaluate / predict / export of one Program in TF1 graphs.

  strategy: a train_distribute strategy that distributed_train.runs_in_graph
  (None: training on the RunConfig's device or cluster task).
  """

  def __init__(self, program, strategy=None):
    self.program = program
    self._strategy = strategy

  def global_step(self):
    return checkpoints.latest_checkpoint_step(self.program.model_dir) or 0

  def latest_checkpoint(self):
    return tf.train.latest_checkpoint(self.program.model_dir)

  def train(self, to_step=None, *, input_fn=None, hooks=(),
            saving_listeners=()):
    """Trains until a hook stops it (a StopAtStepHook at `to_step` added
    when given) or the input ends; the last step's loss."""
    hooks = list(hooks)
    if to_step is not None:
      hooks.append(tf.compat.v1.train.StopAtStepHook(last_step=to_step))
    if self._strategy is not None:
      return distributed_train.train(self.program, self._strategy, input_fn,
                                     hooks, saving_listeners)
    return train_lib.train(self.program, input_fn, hooks, saving_listeners)

  def evaluate(self, steps=None, *, input_fn=None, checkpoint_path=None,
               hooks=(), name=None):
    return evaluate_lib.evaluate(self.program, input_fn, steps, hooks,
                                 checkpoint_path, name)

  def predict(self, *, input_fn=None, checkpoint_path=None, hooks=(),
              yield_single_examples=True, predict_keys=None):
    return predict_lib.predict(self.program, input_fn, predict_keys, hooks,
                               checkpoint_path, yield_single_examples)

  def export(self, export_dir, *, serving_input_receiver_fn=None,
             checkpoint_path=None):
    """A SavedModel of the PREDICT graph (bytes path, as Estimator's)."""
    return self.export_all(
        export_dir, {specs.ModeKeys.PREDICT: serving_input_receiver_fn},
        checkpoint_path=checkpoint_path)

  def export_all(self, export_dir_base, input_receiver_fn_map, **options):
    """One SavedModel with a meta graph per mode of the map (export.py's
    export_all: assets_extra, as_text, checkpoint_path,
    strip_default_attrs)."""
    return export_lib.export_all(self.program, export_dir_base,
                                 input_receiver_fn_map, **options)
