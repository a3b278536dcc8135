"""`python -m tpu_trainer`: the trainer (`tpu-trainer`, trainer.main)."""

from tpu_trainer import cli

if __name__ == '__main__':
  cli.trainer()
