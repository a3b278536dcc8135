#!/usr/bin/env bash
# Creates (or refreshes) the virtualenv of one lane inside the repo:
#   scripts/setup_env.sh legacy   -> .venv/legacy  (TF 2.15.1 + Estimator)
#   scripts/setup_env.sh modern   -> .venv/modern  (TF 2.20, no Estimator)
#   scripts/setup_env.sh newest   -> .venv/newest  (TF 2.21, no Estimator)
# Pins live in requirements/LANE.txt and requirements/LANE-constraints.txt;
# requirements/LANE-nodeps.txt, if any, is installed after them with
# --no-deps.
# Skips the install when the venv already matches those files. A new venv is
# built once per set of pins in a cache outside the clone
# ($TRAINER_VENV_CACHE, default ~/.cache/tpu-trainer/venvs) and linked as
# .venv/LANE, so a fresh clone on the same machine reuses it; a venv already
# at .venv/LANE (a directory) is updated in place.
set -euo pipefail
lane="${1:-legacy}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$root/requirements/$lane.txt"
constraints="$root/requirements/$lane-constraints.txt"
nodeps="$root/requirements/$lane-nodeps.txt"
venv="$root/.venv/$lane"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null || python=python3

[[ -f "$req" ]] || { echo "setup_env: no lane '$lane' ($req missing)" >&2; exit 2; }
pins=("$req")
[[ -f "$constraints" ]] && pins+=("$constraints")
[[ -f "$nodeps" ]] && pins+=("$nodeps")
want="$(cat "${pins[@]}" | sha256sum | cut -d' ' -f1)"
stamp="$venv/.requirements.sha256"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "setup_env: $venv is up to date"
  exit 0
fi
cache="${TRAINER_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tpu-trainer/venvs}/$lane-${want:0:16}"
target="$venv"  # Where to install: the cache, linked once complete.
if [[ ! -e "$venv" || -L "$venv" ]]; then
  mkdir -p "$(dirname "$venv")"
  if [[ -x "$cache/bin/python" && -f "$cache/.requirements.sha256" &&
        "$(cat "$cache/.requirements.sha256")" == "$want" ]]; then
    ln -sfn "$cache" "$venv"
    echo "setup_env: $venv -> $cache (cached, up to date)"
    exit 0
  fi
  rm -rf "$cache"  # A half-built venv from an interrupted install.
  mkdir -p "$(dirname "$cache")"
  target="$cache"
fi
echo "setup_env: installing lane '$lane' into $target"
"$python" -m venv "$target"
"$target/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade 'pip==24.2'
args=(-r "$req")
[[ -f "$constraints" ]] && args+=(-c "$constraints")
"$target/bin/python" -m pip install --quiet --disable-pip-version-check "${args[@]}"
if [[ -f "$nodeps" ]]; then
  "$target/bin/python" -m pip install --quiet --disable-pip-version-check \
      --no-deps -r "$nodeps"
fi
echo "$want" > "$target/.requirements.sha256"
[[ "$target" == "$venv" ]] || ln -sfn "$target" "$venv"
echo "setup_env: done ($("$venv/bin/python" -c 'import tensorflow as tf; print("tensorflow", tf.__version__)' 2>/dev/null))"
