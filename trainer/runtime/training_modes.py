"""The modes (--mode) that train: those whose chief holds the model_dir
lock. TensorFlow-free, for the start-up before TensorFlow is imported."""

TRAINING_MODES = ('train', 'train_and_evaluate')


def trains(mode):
  """Whether --mode=`mode` trains (and so writes checkpoints)."""
  return mode in TRAINING_MODES
