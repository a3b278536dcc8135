"""trainer.legacy: legacy Estimator/TPUEstimator programs on TF >= 2.16.

`python -m trainer.legacy [--cpu_fallback] their_main.py [their flags]` runs a
team's program unchanged; on TensorFlow without Estimator the Estimator API it
calls is a facade (trainer/facade): a call on one device runs on its graph
engine, one under a multi-replica or TPU strategy or across TF_CONFIG
workers on the tf2 runner (docs/architecture.md). Importing this package imports no
TensorFlow (the launcher selects Keras first).
"""
