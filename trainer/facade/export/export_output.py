"""tf.estimator.export's export outputs of the facade: TF core's own classes,
the ones tf.estimator.export re-exported up to 2.15.
"""

from trainer.compat import facade_private

ExportOutput = facade_private.ExportOutput
ClassificationOutput = facade_private.ClassificationOutput
RegressionOutput = facade_private.RegressionOutput
PredictOutput = facade_private.PredictOutput
EvalOutput = facade_private.EvalOutput
