"""The graph engine: Estimator's own execution model on any TensorFlow.

Each train / evaluate / predict / export call builds one TF1 graph and runs
it in a MonitoredSession, with TF core's hooks, Saver and SavedModelBuilder,
as tensorflow_estimator 2.15 does: program.py (what is run, how the model_fn
and input_fn are called), train.py, evaluate.py, predict.py, export.py.
The facade (trainer/facade) runs every one-device call here, and every
export.
"""
