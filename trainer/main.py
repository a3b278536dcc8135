"""Trainer entry point: parse flags, build params once, run the chosen mode.

  python -m trainer.main                      # MLP on the embedded digits
  python -m trainer.main --tpu=$TPU_NAME --flagfile=configs/resnet50_imagenet.cfg
"""

import logging as logging_lib

from absl import app
from absl import flags
from absl import logging

import flags as trainer_flags
from trainer import params as params_lib
from trainer import runners
from trainer import tpu_cluster

FLAGS = flags.FLAGS


def _log_once():
  """TF's logger has its own handler and also propagates to absl's: keep one."""
  tf_logger = logging_lib.getLogger('tensorflow')
  for handler in list(tf_logger.handlers):
    tf_logger.removeHandler(handler)


def main(argv):
  _log_once()
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {" ".join(argv[1:])}')
  try:
    params = params_lib.params_from_flags(FLAGS)
  except ValueError as e:
    raise app.UsageError(str(e)) from e
  try:
    result = runners.run(params)
  except tpu_cluster.TPUUnreachableError as e:
    logging.error('%s', e)
    raise SystemExit(f'error: {e}') from e
  for key, value in result.items():
    print(f'{key}: {value}')


if __name__ == '__main__':
  trainer_flags.define_flags()
  app.run(main)
