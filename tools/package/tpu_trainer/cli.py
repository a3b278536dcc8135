"""Console scripts of the installed package (pyproject.toml [project.scripts]).

Each runs its entry point module as `python -m MODULE` runs it (as __main__,
so its set-up before TensorFlow's first import happens first):

  tpu-trainer                   -m tpu_trainer.trainer.main
  tpu-trainer-legacy            -m tpu_trainer.trainer.legacy
  tpu-trainer-verify-migration  -m tpu_trainer.trainer.verify_migration
  tpu-trainer-memory            -m tpu_trainer.trainer.memory
  tpu-trainer-convert           -m tpu_trainer.trainer.runners.native.convert
  tpu-trainer-migrate           -m tpu_trainer.trainer.migrate

The trainer, verify_migration, the memory report and the converter also take
a packaged flagfile by its repository path from any directory
(--flagfile=configs/resnet18_digits.cfg): when no such file exists relative
to the working directory, the packaged one is used, its relative --data_dir
resolved against the package (tpu_trainer/data/...).
"""

import os
import runpy
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))


def _packaged(path):
  """The packaged file a relative `path` names, if the working directory
  has no such file; else None."""
  if os.path.isabs(path) or os.path.exists(path):
    return None
  candidate = os.path.join(ROOT, path)
  return candidate if os.path.isfile(candidate) else None


def _config_args(path):
  """The flags of packaged flagfile `path`, relative data paths resolved."""
  args = []
  with open(path, encoding='utf-8') as f:
    for line in f:
      line = line.strip()
      if not line or line.startswith(('#', '//')):
        continue
      name, eq, value = line.partition('=')
      if eq and name.endswith('_dir') and not os.path.isabs(value) and (
          not os.path.exists(value)) and os.path.isdir(
              os.path.join(ROOT, value)):
        line = f'{name}={os.path.join(ROOT, value)}'
      args.append(line)
  return args


def resolve_packaged_flagfiles(argv):
  """argv with each --flagfile=configs/... that only the package has
  replaced by that file's flags (in place, so later flags still win)."""
  resolved = []
  for arg in argv:
    name, eq, value = arg.partition('=')
    packaged = _packaged(value) if name == '--flagfile' and eq else None
    resolved.extend(_config_args(packaged) if packaged else [arg])
  return resolved


def _run(module, flagfiles=True):
  if flagfiles:
    sys.argv[1:] = resolve_packaged_flagfiles(sys.argv[1:])
  # Usage lines and --help name the script the user typed.
  from tpu_trainer.trainer.runtime import startup  # pylint: disable=g-import-not-at-top
  startup.set_program_name(os.path.basename(sys.argv[0]))
  runpy.run_module(f'tpu_trainer.{module}', run_name='__main__',
                   alter_sys=True)


def trainer():
  _run('trainer.main')


def legacy():
  _run('trainer.legacy', flagfiles=False)  # argv is the program's.


def verify_migration():
  _run('trainer.verify_migration')


def memory():
  _run('trainer.memory')


def convert():
  _run('trainer.runners.native.convert')


def migrate():
  _run('trainer.migrate')
