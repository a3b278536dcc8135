"""tensorflow_estimator.python.estimator.tpu.iteration_count_estimator:
TPUEstimator's sizing of loops to a time budget
(`TPUConfig(iterations_per_loop='60s')`), as TF 2.15 behaves; the loop
policy's own (trainer/runtime/iteration_count.py)."""

from trainer.runtime.iteration_count import IterationCountEstimator  # pylint: disable=unused-import
from trainer.runtime.iteration_count import RuntimeCounter  # pylint: disable=unused-import
