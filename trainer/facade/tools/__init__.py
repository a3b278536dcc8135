"""tensorflow_estimator's tools package of the facade."""
