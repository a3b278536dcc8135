"""The keys of the prediction dicts of heads and canned Estimators."""


class PredictionKeys:
  """Prediction dict keys (tensorflow_estimator's canned.prediction_keys)."""
  CLASSES = 'classes'
  CLASS_IDS = 'class_ids'
  ALL_CLASSES = 'all_classes'
  ALL_CLASS_IDS = 'all_class_ids'
  LOGISTIC = 'logistic'
  LOGITS = 'logits'
  PREDICTIONS = 'predictions'
  PROBABILITIES = 'probabilities'
  TOP_K = 'top_k'
