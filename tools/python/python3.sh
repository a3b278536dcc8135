#!/bin/sh
# Interpreter of the Python toolchain (tools/python/BUILD): execs the python of
# the project's virtualenv, .venv/legacy, found relative to this script's real
# location in the source tree (Bazel runs it through symlinks in runfiles and
# sandboxes). Set up the venv with: bash scripts/setup_env.sh legacy
#
# -P: Python would otherwise put the real directory of the main script
# (symlinks resolved: a directory of the source tree) at sys.path[0], so
# modules would import from the source tree even when no BUILD dependency
# brings them into runfiles. With -P, imports resolve through runfiles only
# (the stub's PYTHONPATH). A flag, not PYTHONSAFEPATH, so that subprocesses
# such as `python -m trainer.main` run from the runfiles tree keep their
# usual sys.path[0], the working directory.
self="$(readlink -f "$0")" || exit 1
root="$(dirname "$(dirname "$(dirname "$self")")")"
python="$root/.venv/legacy/bin/python"
if [ ! -x "$python" ]; then
  echo "tools/python/python3.sh: no virtualenv interpreter at $python;" \
       "run: bash scripts/setup_env.sh legacy" >&2
  exit 1
fi
export PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1
exec "$python" -P "$@"
