"""The Estimator API's value types, below every runner and the facade.

`specs`: ModeKeys and what a model_fn returns (EstimatorSpec,
TPUEstimatorSpec), with the real Estimator's validation. The runners
(trainer/graph, trainer/tf2) and the facade (trainer/legacy) import them;
this package imports nothing of the trainer above it.
"""
