"""`python -m trainer.legacy`: the launcher (trainer/legacy/launcher.py)."""

import sys

from trainer.legacy import launcher

if __name__ == '__main__':
  sys.exit(launcher.main(sys.argv))
