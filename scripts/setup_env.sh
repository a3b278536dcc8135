#!/usr/bin/env bash
# Creates (or refreshes) the virtualenv of one lane inside the repo:
#   scripts/setup_env.sh legacy   -> .venv/legacy  (TF 2.15.1 + Estimator)
#   scripts/setup_env.sh modern   -> .venv/modern  (TF 2.20, tf2 runner only)
# Pins live in requirements/LANE.txt and requirements/LANE-constraints.txt.
# Skips the install when the venv already matches those files.
set -euo pipefail
lane="${1:-legacy}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$root/requirements/$lane.txt"
constraints="$root/requirements/$lane-constraints.txt"
venv="$root/.venv/$lane"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null || python=python3

[[ -f "$req" ]] || { echo "setup_env: no lane '$lane' ($req missing)" >&2; exit 2; }
stamp="$venv/.requirements.sha256"
want="$(cat "$req" "$constraints" 2>/dev/null | sha256sum | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "setup_env: $venv is up to date"
  exit 0
fi
echo "setup_env: installing lane '$lane' into $venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade 'pip==24.2'
args=(-r "$req")
[[ -f "$constraints" ]] && args+=(-c "$constraints")
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${args[@]}"
echo "$want" > "$stamp"
echo "setup_env: done ($("$venv/bin/python" -c 'import tensorflow as tf; print("tensorflow", tf.__version__)' 2>/dev/null))"
