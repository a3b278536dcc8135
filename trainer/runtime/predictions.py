"""What Estimator.predict checks of the prediction arrays of a batch, for
every engine that yields them one example at a time."""


def batch_length(values):
  """The batch length of a dict of prediction arrays; Estimator's
  ValueError unless they all have the first one's."""
  length = None
  for key, value in values.items():
    length = length or value.shape[0]
    if value.shape[0] != length:
      raise ValueError('Batch length of predictions should be same. %s has '
                       'different batch length than others.' % key)
  return length
