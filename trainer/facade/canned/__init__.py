"""The facade's canned Estimators and what they share (keys, v1 heads)."""
