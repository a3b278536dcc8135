"""The engine interface: what runs one model_fn / input_fn pair.

An engine trains from model_dir's latest checkpoint to a step, with the
call's SessionRunHooks and CheckpointSaverListeners, and evaluates,
predicts and exports from model_dir's checkpoints, calling the model_fn and
the input_fn as its front end's contract says (Estimator's, TPUEstimator's
or trainer.main's params). Tf2Engine (trainer/engines/tf2/engine.py)
implements it: the same model_fn under tf.distribute, TPUEstimator's
behaviour with TF2 machinery. The graph engine (trainer/engines/graph) is
Estimator's own execution model, one TF1 graph and one MonitoredSession
per call; it is not behind this interface, because the facade's Estimator
(trainer/facade/estimator.py) drives it through the reference's
overridable methods (_train_model, _evaluate_build_graph, _call_model_fn,
...), which a subclass may replace, calling the graph engine's pieces
(program, training loop, evaluation run, export writers) at the
reference's points.
Front ends choose the engine: the facade per Estimator call
(trainer/facade/estimator.py, `Estimator._needs_tf2`), trainer.main by
--runner (trainer/runners/registry.py).
"""

from typing import Any, Dict, Iterator, Optional, Protocol, Sequence


class Engine(Protocol):
  """What every engine offers its front end."""

  def global_step(self) -> int:
    """The global step of model_dir's latest checkpoint (0 without one)."""

  def latest_checkpoint(self) -> Optional[str]:
    """model_dir's latest checkpoint prefix, None if there is none."""

  def train(self, to_step: Optional[int] = None, *, input_fn=None,
            hooks: Sequence[Any] = (),
            saving_listeners: Sequence[Any] = ()) -> Optional[float]:
    """Trains until global_step reaches `to_step` (None: until a hook
    stops training or the input ends), checkpointing as the engine's
    cadence says; returns the loss of the last step (None if none ran)."""

  def evaluate(self, steps: Optional[int] = None, *, input_fn=None,
               checkpoint_path: Optional[str] = None,
               hooks: Sequence[Any] = (),
               name: Optional[str] = None) -> Dict[str, Any]:
    """{'loss', metrics..., 'global_step'} over `steps` batches (all the
    input when None) of `checkpoint_path` (default: the latest), written to
    model_dir/eval[_name] as Estimator writes it."""

  def predict(self, *, input_fn=None, checkpoint_path: Optional[str] = None,
              hooks: Sequence[Any] = (), yield_single_examples: bool = True,
              predict_keys: Optional[Sequence[str]] = None) -> Iterator[Any]:
    """Yields the predictions of each example (or batch)."""

  def export(self, export_dir: str, *, serving_input_receiver_fn=None,
             checkpoint_path: Optional[str] = None) -> Any:
    """Writes a SavedModel of the PREDICT graph under export_dir/TIMESTAMP
    from `checkpoint_path` (default: the latest); returns its path."""
