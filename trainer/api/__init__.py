"""The Estimator API's value types, below every runner and the facade.

`specs`: ModeKeys and what a model_fn returns (EstimatorSpec,
TPUEstimatorSpec), with the real Estimator's validation. `estimator_names`:
the real classes where TensorFlow has Estimator, else these, for model code.
The runners and the facade (trainer/facade) import them; this package
imports nothing of the trainer but trainer/compat.
"""
