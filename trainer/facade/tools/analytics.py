"""tensorflow_estimator's tools/analytics.py: usage tracking, which does
nothing outside Google (as in the reference)."""


def track_usage(tool_id, tags):
  """Tracks nothing."""
  del tool_id, tags


def track_numerical_issues(exc_info):
  """Tracks nothing."""
  del exc_info
