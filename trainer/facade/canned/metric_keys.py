"""The keys heads and canned Estimators give their metrics and summaries.

A head with a name appends '/NAME' to each (base_head.Head._summary_key).
The *_AT_* keys are %-formats: a threshold (%g), a class id (%d) or a class
name (%s).
"""

from trainer.api import specs


class MetricKeys:
  """Metric and summary keys (tensorflow_estimator's canned.metric_keys)."""
  LOSS = specs.LOSS_METRIC_KEY
  LOSS_MEAN = 'average_loss'
  LOSS_REGULARIZATION = 'regularization_loss'

  ACCURACY = 'accuracy'
  PRECISION = 'precision'
  RECALL = 'recall'
  # The accuracy of always predicting the most frequent class.
  ACCURACY_BASELINE = 'accuracy_baseline'
  AUC = 'auc'
  AUC_PR = 'auc_precision_recall'
  LABEL_MEAN = 'label/mean'
  PREDICTION_MEAN = 'prediction/mean'

  # At a probability threshold in (0, 1).
  ACCURACY_AT_THRESHOLD = 'accuracy/positive_threshold_%g'
  PRECISION_AT_THRESHOLD = 'precision/positive_threshold_%g'
  RECALL_AT_THRESHOLD = 'recall/positive_threshold_%g'

  # At a constraint on a competing metric, in (0, 1).
  PRECISION_AT_RECALL = 'precision_at_recall_%g'
  RECALL_AT_PRECISION = 'recall_at_precision_%g'
  SENSITIVITY_AT_SPECIFICITY = 'sensitivity_at_specificity_%g'
  SPECIFICITY_AT_SENSITIVITY = 'specificity_at_sensitivity_%g'

  # Per class id.
  PROBABILITY_MEAN_AT_CLASS = 'probability_mean/class%d'
  AUC_AT_CLASS = 'auc/class%d'
  AUC_PR_AT_CLASS = 'auc_precision_recall/class%d'

  # Per class name (label_vocabulary).
  PROBABILITY_MEAN_AT_NAME = 'probability_mean/%s'
  AUC_AT_NAME = 'auc/%s'
  AUC_PR_AT_NAME = 'auc_precision_recall/%s'
