"""The graph engine: Estimator's own execution model on any TensorFlow.

Each train / evaluate / predict / export call builds one TF1 graph and runs
it in a MonitoredSession, with TF core's hooks, Saver and SavedModelBuilder,
as tensorflow_estimator 2.15 does. The facade's Estimator
(trainer/facade/estimator.py) builds the graphs through its overridable
methods, as the reference does, and runs them with the pieces here:
program.py (how the model_fn and input_fn are called), train.py (the
training loop), evaluate.py (the evaluation run), export.py (SavedModel
meta graphs), distributed_train.py and cluster.py.
"""
